package names

import "regexp"

// SessionExpr is a named session's name unanchored (CONTRACT.md "SSH":
// INSTANCE+NAME): a lowercase letter or digit, then up to 31 lowercase
// letters, digits, '_' or '-'. No '.', so that NAME can be part of a file
// name, a holder's socket and a session marker as it is.
const SessionExpr = `[a-z0-9][a-z0-9_-]{0,31}`

var sessionPattern = regexp.MustCompile(`^` + SessionExpr + `$`)

// ValidSession reports whether name may name a session (the default
// session's name, "", is not one a user writes).
func ValidSession(name string) bool { return sessionPattern.MatchString(name) }
