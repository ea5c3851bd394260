// Package doclinks holds only a test: every relative link in README.md,
// SECURITY.md and docs/*.md must name a file of the repository (never one
// outside it), and a link to a heading must name a heading that exists, so
// moving a section breaks `make test` rather than a reader's click.
package doclinks
