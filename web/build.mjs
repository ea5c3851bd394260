// Bundles src/app.js and src/app.css (with xterm and its stylesheet) into
// dist/, which embed.go serves from the binary. Run by `make build` after
// `npm ci`; `node build.mjs` works on its own once node_modules exists.
import * as esbuild from 'esbuild';

await esbuild.build({
  entryPoints: ['src/app.js', 'src/app.css'],
  outdir: 'dist',
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'eof',
  logLevel: 'info',
});
