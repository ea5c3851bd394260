package names

import (
	"regexp"
	"strconv"
)

// loginPattern is a login's syntax (CONTRACT.md "Named sessions and
// logins"): what the portable user names of POSIX allow, which a passwd
// line always holds: a letter, digit or '_', then up to 31 letters,
// digits, '_', '.' or '-'. No ':' or newline (the file's separators), no
// '@' or '+' (the SSH user grammar's), no '/', no blank, never "-x"
// (an option to a program). All digits is a numeric uid.
var loginPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$`)

// ValidLogin reports whether login follows the syntax (a numeric uid
// included, when it fits in 32 bits and is not -1's 4294967295).
func ValidLogin(login string) bool {
	if !loginPattern.MatchString(login) {
		return false
	}
	if _, numeric := LoginUID(login); numeric {
		return true
	}
	return !allDigits(login)
}

// LoginUID reads a numeric login (decimal, no leading zero): its uid, and
// whether login is one.
func LoginUID(login string) (uint32, bool) {
	if !allDigits(login) || len(login) > 1 && login[0] == '0' { // canonical: one spelling per uid
		return 0, false
	}
	n, err := strconv.ParseUint(login, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, false
	}
	return uint32(n), true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
