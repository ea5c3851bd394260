// The xterm.js oracle: the headless build of the xterm.js version the page
// uses (web/package.json) reads requests from stdin, each two frames (a
// 4-byte big-endian length, then bytes): what the client already holds and
// the output to check. A fresh terminal reads both; the answer is two
// frames: what the terminal sent back (to the shell) for the second only,
// then what it shows: the rows of its viewport, one a line with trailing
// blanks left out, then the cursor as "cursor X,Y".
import { createRequire } from 'node:module';

const require = createRequire(process.argv[2]); // web/package.json
const { Terminal } = require('@xterm/headless');

let buf = Buffer.alloc(0);
let busy = Promise.resolve();

function frame(b) {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(b.length);
  process.stdout.write(Buffer.concat([head, b]));
}

function run(held, data) {
  return new Promise((resolve) => {
    const term = new Terminal({ cols: 80, rows: 24, allowProposedApi: true, logLevel: 'off' });
    let answers = [];
    term.onData((s) => answers.push(Buffer.from(s, 'utf8')));
    term.onBinary((s) => answers.push(Buffer.from(s, 'latin1')));
    term.write(held, () => setImmediate(() => {
      answers = [];
      term.write(data, () => {
        // Let answers queued behind the parse settle.
        setImmediate(() => {
          const b = term.buffer.active;
          const rows = [];
          for (let y = 0; y < term.rows; y++) {
            const l = b.getLine(b.baseY + y);
            rows.push(l ? l.translateToString(true) : '');
          }
          rows.push(`cursor ${b.cursorX},${b.cursorY}`);
          term.dispose();
          frame(Buffer.concat(answers));
          frame(Buffer.from(rows.join('\n'), 'utf8'));
          resolve();
        });
      });
    }));
  });
}

process.stdin.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  for (;;) {
    if (buf.length < 4) break;
    const h = buf.readUInt32BE(0);
    if (buf.length < 8 + h) break;
    const n = buf.readUInt32BE(4 + h);
    if (buf.length < 8 + h + n) break;
    const held = new Uint8Array(buf.subarray(4, 4 + h));
    const data = new Uint8Array(buf.subarray(8 + h, 8 + h + n));
    buf = buf.subarray(8 + h + n);
    busy = busy.then(() => run(held, data));
  }
});
