package keys

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name          string
		raw           []string
		wantNoPTY     bool
		wantReadOnly  bool
		wantInstances []string
		wantFrom      bool
		wantErr       string // substring; "" = accepted
		wantWarning   string
	}{
		{name: "none"},
		{name: "no-pty", raw: []string{"no-pty"}, wantNoPTY: true},
		{name: "restrict denies the pty", raw: []string{"restrict"}, wantNoPTY: true},
		{name: "restrict,pty allows it", raw: []string{"restrict", "pty"}, wantNoPTY: false},
		{name: "pty,no-pty: last wins", raw: []string{"pty", "no-pty"}, wantNoPTY: true},
		{name: "case-insensitive names", raw: []string{"No-PTY", "NO-X11-FORWARDING"}, wantNoPTY: true},
		{name: "agent, x11 and rc options are no-ops", raw: []string{"no-agent-forwarding", "no-X11-forwarding", "no-user-rc", "agent-forwarding", "x11-forwarding", "user-rc"}},
		{name: "instances", raw: []string{`instances="web-*,db"`}, wantInstances: []string{"web-*", "db"}},
		{name: "instances with restrict", raw: []string{"restrict", `instances="web-*"`}, wantNoPTY: true, wantInstances: []string{"web-*"}},
		{name: "read-only", raw: []string{"read-only"}, wantReadOnly: true},
		{name: "read-only is case-insensitive and keeps the other limits", raw: []string{"Read-Only", `instances="web-*"`}, wantReadOnly: true, wantInstances: []string{"web-*"}},
		{name: "read-only with restrict", raw: []string{"restrict", "read-only"}, wantNoPTY: true, wantReadOnly: true},
		{name: "from", raw: []string{`from="10.0.0.0/8"`}, wantFrom: true},
		{name: "from with escaped quote", raw: []string{`from="a\"b"`}, wantFrom: true},
		{name: "bad from network is a warning", raw: []string{`from="10.0.0.1/8"`}, wantFrom: true, wantWarning: "host bits"},
		{name: "empty from entry is a warning", raw: []string{`from="10.0.0.1,"`}, wantFrom: true, wantWarning: "empty entry"},

		{name: "command fails closed", raw: []string{`command="/bin/true"`}, wantErr: `unsupported option "command"`},
		{name: "environment fails closed", raw: []string{`environment="A=b"`}, wantErr: `unsupported option "environment"`},
		{name: "cert-authority fails closed", raw: []string{"cert-authority"}, wantErr: `unsupported option "cert-authority"`},
		{name: "expiry-time fails closed", raw: []string{`expiry-time="20300101"`}, wantErr: `unsupported option "expiry-time"`},
		{name: "principals fails closed", raw: []string{`principals="root"`}, wantErr: `unsupported option "principals"`},
		{name: "permitlisten without value", raw: []string{"permitlisten"}, wantErr: "needs a quoted value"},
		{name: "permitlisten bad port", raw: []string{`permitlisten="localhost:0"`}, wantErr: "permitlisten="},
		{name: "permitopen without value", raw: []string{"permitopen"}, wantErr: "needs a quoted value"},
		{name: "permitopen unquoted", raw: []string{"permitopen=a:1"}, wantErr: "double quotes"},
		{name: "permitopen without port", raw: []string{`permitopen="localhost"`}, wantErr: "HOST:PORT"},
		{name: "no-touch-required fails closed", raw: []string{"no-touch-required"}, wantErr: `unsupported option "no-touch-required"`},
		{name: "unknown after good ones", raw: []string{"no-pty", "bogus"}, wantErr: `unsupported option "bogus"`},
		{name: "flag with a value", raw: []string{`no-pty="yes"`}, wantErr: "takes no value"},
		{name: "read-only with a value", raw: []string{`read-only="no"`}, wantErr: "takes no value"},
		{name: "instances without value", raw: []string{"instances"}, wantErr: "needs a quoted value"},
		{name: "instances unquoted", raw: []string{"instances=web"}, wantErr: "double quotes"},
		{name: "instances unterminated", raw: []string{`instances="web`}, wantErr: "missing closing quote"},
		{name: "instances trailing text", raw: []string{`instances="web"x`}, wantErr: "after the closing quote"},
		{name: "instances empty", raw: []string{`instances=""`}, wantErr: "empty"},
		{name: "instances malformed", raw: []string{`instances="web["`}, wantErr: "syntax error"},
		{name: "instances twice", raw: []string{`instances="a"`, `instances="b"`}, wantErr: "given twice"},
		{name: "from twice", raw: []string{`from="*"`, `from="*"`}, wantErr: "given twice"},
		{name: "from unquoted", raw: []string{"from=10.0.0.1"}, wantErr: "double quotes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, warnings, err := parseOptions(tt.raw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseOptions(%q) error = %v, want one containing %q", tt.raw, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseOptions(%q): %v", tt.raw, err)
			}
			if o.noPTY != tt.wantNoPTY {
				t.Errorf("noPTY = %v, want %v", o.noPTY, tt.wantNoPTY)
			}
			if o.readOnly != tt.wantReadOnly {
				t.Errorf("readOnly = %v, want %v", o.readOnly, tt.wantReadOnly)
			}
			if strings.Join(o.instances, "|") != strings.Join(tt.wantInstances, "|") {
				t.Errorf("instances = %q, want %q", o.instances, tt.wantInstances)
			}
			if (o.from != nil) != tt.wantFrom {
				t.Errorf("from = %v, want set: %v", o.from, tt.wantFrom)
			}
			got := strings.Join(warnings, "\n")
			if (tt.wantWarning == "") != (got == "") || !strings.Contains(got, tt.wantWarning) {
				t.Errorf("warnings = %q, want one containing %q", warnings, tt.wantWarning)
			}
		})
	}
}

func TestDequoteKeepsEscapedQuote(t *testing.T) {
	o, _, err := parseOptions([]string{`from="\"*"`})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.from.entries) != 1 || o.from.entries[0].glob != `"*` {
		t.Fatalf("entries = %+v, want one glob %q", o.from.entries, `"*`)
	}
	if o.from.match(netip.MustParseAddr("10.0.0.1")) {
		t.Error(`from="\"*" matched an address`)
	}
}

func TestParseOptionsPortForwarding(t *testing.T) {
	tests := []struct {
		raw        []string
		wantNo     bool
		wantPermit []string
	}{
		{raw: nil},
		{raw: []string{"no-port-forwarding"}, wantNo: true},
		{raw: []string{"No-Port-Forwarding"}, wantNo: true},
		{raw: []string{"restrict"}, wantNo: true},
		{raw: []string{"restrict", "port-forwarding"}},
		{raw: []string{"port-forwarding", "no-port-forwarding"}, wantNo: true},
		{raw: []string{"restrict", "pty"}, wantNo: true},
		{raw: []string{`permitopen="localhost:80"`, `PermitOpen="[::1]:*"`, `permitopen="*:5432"`}, wantPermit: []string{"localhost:80", "[::1]:*", "*:5432"}},
	}
	for _, tt := range tests {
		o, _, err := parseOptions(tt.raw)
		if err != nil {
			t.Fatalf("parseOptions(%q): %v", tt.raw, err)
		}
		if o.noPortForwarding != tt.wantNo || strings.Join(o.permitOpen, "|") != strings.Join(tt.wantPermit, "|") {
			t.Errorf("parseOptions(%q): noPortForwarding %v permitOpen %q, want %v %q", tt.raw, o.noPortForwarding, o.permitOpen, tt.wantNo, tt.wantPermit)
		}
	}
}
