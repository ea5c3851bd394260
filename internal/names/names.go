// Package names holds the contract's instance name syntax, the one source
// for every package that checks a name (sessions, keys, the page's
// addresses in web), and the session id syntax that the holder, the kill
// script's markers and the file API check. It imports only regexp.
package names

import "regexp"

// Expr is the syntax unanchored, for patterns that embed a name (the
// page's /t/NAME): a letter or digit, then up to 127 letters, digits, '.',
// '_' or '-'. web/src/app.js and index.html write it in JavaScript; a test
// in web keeps them equal.
const Expr = `[A-Za-z0-9][A-Za-z0-9_.-]{0,127}`

// Pattern matches a whole instance name.
var Pattern = regexp.MustCompile(`^` + Expr + `$`)

// Valid reports whether name follows the contract's syntax.
func Valid(name string) bool { return Pattern.MatchString(name) }

// sessionIDPattern is a session id's syntax: a letter or digit, then up to
// 127 letters, digits, '_' or '-' (no '.', which joins a gateway id and a
// session id in a marker).
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// ValidSessionID reports whether id may be part of a session marker
// (procmark.KillScript matches markers as plain words).
func ValidSessionID(id string) bool { return sessionIDPattern.MatchString(id) }
