package names

import (
	"strings"
	"testing"
)

// The syntax as CONTRACT.md writes it, case by case: a change to Expr that
// the contract does not make fails here.
func TestValid(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"web1", true}, {"a", true}, {"A-b_c.d", true}, {"9", true},
		{strings.Repeat("a", 128), true}, {"x" + strings.Repeat("-", 127), true},
		{"", false}, {".", false}, {"..", false}, {"-rf", false}, {".hidden", false}, {"_x", false},
		{strings.Repeat("a", 129), false}, {"a/b", false}, {"../etc/passwd", false},
		{"web1\n", false}, {"web1\x00", false}, {" web1", false}, {"wéb", false},
		{"web 1", false}, {"$(id)", false}, {"a;b", false}, {"*", false}, {"\u202eweb", false},
	} {
		if got := Valid(tt.name); got != tt.ok {
			t.Errorf("Valid(%q) = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

func TestValidSessionID(t *testing.T) {
	for _, tt := range []struct {
		id string
		ok bool
	}{
		{"a", true}, {"18d69db0d01fb76c", true}, {"c-x_1", true}, {strings.Repeat("a", 128), true},
		{"", false}, {"-a", false}, {"_a", false}, {"a.b", false}, {"a b", false}, {"a\n", false},
		{strings.Repeat("a", 129), false}, {"$(id)", false},
	} {
		if got := ValidSessionID(tt.id); got != tt.ok {
			t.Errorf("ValidSessionID(%q) = %v, want %v", tt.id, got, tt.ok)
		}
	}
}
