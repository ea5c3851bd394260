package keys

import (
	"strings"
	"testing"
)

func TestMay(t *testing.T) {
	long := strings.Repeat("a", 128)
	tests := []struct {
		name      string
		instances []string
		instance  string
		want      bool
	}{
		{"no patterns allow all", nil, "web1", true},
		{"no patterns still check the name", nil, "../x", false},
		{"empty name", nil, "", false},
		{"leading dash", nil, "-x", false},
		{"slash", nil, "a/b", false},
		{"128 chars", nil, long, true},
		{"129 chars", nil, long + "a", false},
		{"star", []string{"*"}, "web1", true},
		{"star refuses a path-like name", []string{"*"}, "../x", false},
		{"star refuses a dot-dot name with slash", []string{"*/*"}, "a/b", false},
		{"star refuses spaces", []string{"*"}, "web 1", false},
		{"prefix glob", []string{"web-*"}, "web-1", true},
		{"prefix glob miss", []string{"web-*"}, "db-1", false},
		{"second pattern", []string{"web-*", "db"}, "db", true},
		{"exact only", []string{"db"}, "db2", false},
		{"question mark", []string{"db?"}, "db2", true},
		{"class", []string{"db[0-4]"}, "db3", true},
		{"class miss", []string{"db[0-4]"}, "db7", false},
		{"negated class", []string{"db[^0-4]"}, "db7", true},
		{"malformed matches nothing", []string{"db["}, "db[", false},
		{"malformed does not stop the others", []string{"[", "db"}, "db", true},
		{"case sensitive", []string{"Web"}, "web", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := Identity{Grants: []Grant{{Instances: tt.instances}}}
			if got := id.May(tt.instance); got != tt.want {
				t.Errorf("Identity{Instances: %q}.May(%q) = %v, want %v", tt.instances, tt.instance, got, tt.want)
			}
		})
	}
}

func TestParseInstances(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "web-*", want: []string{"web-*"}},
		{in: "web-*,db,cache?", want: []string{"web-*", "db", "cache?"}},
		{in: "[!x]*", want: []string{"[^x]*"}},
		{in: `\[!x`, want: []string{`\[!x`}},
		{in: "[a!]", want: []string{"[a!]"}},
		{in: "", wantErr: "empty"},
		{in: "a,,b", wantErr: "empty pattern"},
		{in: "a,", wantErr: "empty pattern"},
		{in: "web/*", wantErr: "'/'"},
		{in: "db[", wantErr: "syntax error"},
		{in: `db\`, wantErr: "syntax error"},
	}
	for _, tt := range tests {
		got, err := parseInstances(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseInstances(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("parseInstances(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestDisplayName(t *testing.T) {
	tests := []struct {
		in    string
		limit int
		want  string
	}{
		{"alice@laptop", 64, "alice@laptop"},
		{"evil\x1b[2Jname", 64, "evil?[2Jname"},
		{"tab\there\n", 64, "tab?here?"},
		{"héllo", 64, "héllo"},
		{"abcdef", 4, "abcd…"},
		{"abcd", 4, "abcd"},
	}
	for _, tt := range tests {
		if got := displayName(tt.in, tt.limit); got != tt.want {
			t.Errorf("displayName(%q, %d) = %q, want %q", tt.in, tt.limit, got, tt.want)
		}
	}
}
