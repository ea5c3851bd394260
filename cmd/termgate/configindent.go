package main

import (
	"regexp"
	"strings"
)

var (
	// indentedKey is a key: value line that starts with white space.
	indentedKey = regexp.MustCompile(`^[ \t]+([a-z][a-z0-9-]*):(\s|$)`)
	// scalarKey is a top-level key: value line with its value on it (no
	// block of its own follows).
	scalarKey = regexp.MustCompile(`^[a-z][a-z0-9-]*:\s*[^\s#]`)
)

// indentedKeyLine finds the line a YAML parser trips over when a key is
// indented under a key that already has its value (the usual slip:
// removing only the # of "#   instance-label: termgate"). The parser
// reports the line where the mapping began, often far above; this is the
// line to fix. 0 when there is none.
func indentedKeyLine(data []byte) (line int, key string) {
	prevScalar := false // the previous line that holds YAML is a top-level key: value
	for i, l := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if m := indentedKey.FindStringSubmatch(l); m != nil && prevScalar {
			return i + 1, m[1]
		}
		prevScalar = scalarKey.MatchString(l)
	}
	return 0, ""
}
