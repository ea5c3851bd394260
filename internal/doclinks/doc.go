// Package doclinks holds only tests: every relative link in README.md,
// SECURITY.md and docs/*.md must name a file of the repository (never one
// outside it), and a link to a heading must name a heading that exists, so
// moving a section breaks `make test` rather than a reader's click.
// And every test SECURITY.md names (`package/file_test.go TestName`) must
// be a function of that file, so renaming or deleting a test that shows a
// security promise breaks `make test` too.
package doclinks
