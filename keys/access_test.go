package keys

import (
	"slices"
	"strings"
	"testing"
)

// TestOnDecide is the decision as a table: credential (its grants) ×
// instance × action, each cell allowed or refused as CONTRACT.md's "One
// decision", "Who may" and "Single sign-on" say. The listeners' matrix
// (web/access_matrix_test.go) runs the same cells through real SSH and
// HTTP.
func TestOnDecide(t *testing.T) {
	no := false
	mixed, _ := Policies{
		{Groups: []string{"ops"}, Instances: []string{"web*"}},
		{Groups: []string{"ops"}, Instances: []string{"db*"}, ReadOnly: true},
		{Groups: []string{"ops"}, Instances: []string{"cache*"}, PortForwarding: &no, Files: "download"},
		{Groups: []string{"ops"}, Instances: []string{"mq*"}, AgentForwarding: &no},
	}.Identity("alice@example.com", []string{"ops"}, true)
	key := func(g Grant) Identity { return Identity{Kind: KindKey, Grants: []Grant{g}} }
	all := Actions()
	except := func(out ...Action) []Action {
		var r []Action
		for _, a := range all {
			if !slices.Contains(out, a) {
				r = append(r, a)
			}
		}
		return r
	}
	watch := []Action{Watch, Terminal}
	cases := []struct {
		name    string
		id      Identity
		sw      Switches
		inst    string
		allowed []Action // every other action is refused
		reason  string   // the audit reason of a refused Reset (or any refusal)
	}{
		{"key", key(Grant{}), Switches{}, "web1", all, ""},
		{"key, instances= miss", key(Grant{Instances: []string{"web*"}}), Switches{}, "db1", nil, "instance not allowed for this key"},
		{"key, bad name", key(Grant{}), Switches{}, "../x", nil, "instance not allowed for this key"},
		{"read-only key", key(Grant{ReadOnly: true}), Switches{}, "web1", watch, "read-only key"},
		{"no-pty key", key(Grant{NoPTY: true}), Switches{}, "web1", except(Terminal), ""},
		{"no-port-forwarding key", key(Grant{NoPortForwarding: true}), Switches{}, "web1", except(Forward), ""},
		{"permitlisten key", key(Grant{PermitListen: []string{":8080"}}), Switches{}, "web1", all, ""},
		{"download-only key", key(Grant{Files: FilesDownload}), Switches{}, "web1", except(WriteFiles), ""},
		{"files off", key(Grant{}), Switches{NoFileTransfer: true}, "web1", except(ReadFiles, WriteFiles), ""},
		{"forwarding off", key(Grant{}), Switches{NoPortForwarding: true}, "web1", except(Forward), ""},
		{"no-agent-forwarding key", key(Grant{NoAgentForwarding: true}), Switches{}, "web1", except(Agent), ""},
		{"agent forwarding off", key(Grant{}), Switches{NoAgentForwarding: true}, "web1", except(Agent), ""},
		{"read-only token", Identity{Kind: KindToken, Grants: []Grant{{ReadOnly: true}}}, Switches{}, "web1", watch, "read-only token"},
		{"read-only certificate", Identity{Kind: KindCertificate, Grants: []Grant{{ReadOnly: true}}}, Switches{}, "web1", watch, "read-only certificate"},
		{"sign-in, read-write rule", mixed, Switches{}, "web1", all, ""},
		{"sign-in, read-only rule", mixed, Switches{}, "db1", watch, "read-only sign-in"},
		{"sign-in, no forwarding, download", mixed, Switches{}, "cache1", except(Forward, WriteFiles), ""},
		{"sign-in, no agent forwarding", mixed, Switches{}, "mq1", except(Agent), ""},
		{"sign-in, no rule", mixed, Switches{}, "mail1", nil, "instance not allowed for this sign-in"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.id.On(tc.inst, tc.sw)
			for _, act := range all {
				r := a.Decide(act)
				want := slices.Contains(tc.allowed, act)
				if (r == nil) != want {
					t.Errorf("%s: refused %v (%v), want allowed %v", act, r != nil, r, want)
					continue
				}
				if r == nil {
					continue
				}
				if r.Message == "" || r.Reason == "" || r.Hidden != !a.Use {
					t.Errorf("%s: refusal %+v", act, r)
				}
				if !r.Hidden && !strings.Contains(r.Message, "refused: ") {
					t.Errorf("%s: %q does not say what was refused", act, r.Message)
				}
			}
			if tc.reason != "" {
				if r := a.Decide(Reset); r == nil || (r.Reason != tc.reason && r.Action == Reset) {
					t.Errorf("reset: %+v, want reason %q", r, tc.reason)
				}
			}
		})
	}
}

// TestOnMixedSignInForwarding: a read-only rule with forwarding allowed
// adds nothing to a read-write rule without it (each grant on its own,
// then the union), and permitopen= targets only come from grants that
// may forward.
func TestOnMixedSignInForwarding(t *testing.T) {
	id := Identity{Kind: KindSignIn, Grants: []Grant{
		{Instances: []string{"web1"}, NoPortForwarding: true},
		{Instances: []string{"web1"}, ReadOnly: true},
	}}
	if a := id.On("web1", Switches{}); !a.Write || a.Forward || a.Decide(Forward) == nil {
		t.Fatalf("%+v: forwarding allowed", a)
	}
	id = Identity{Kind: KindKey, Grants: []Grant{
		{Instances: []string{"web1"}, PermitOpen: []string{"127.0.0.1:80"}},
		{Instances: []string{"web1"}, NoPortForwarding: true, PermitOpen: []string{"127.0.0.1:22"}},
	}}
	a := id.On("web1", Switches{})
	if a.DecideOpen("127.0.0.1", 80) != nil || a.DecideOpen("127.0.0.1", 22) == nil {
		t.Fatalf("%+v", a)
	}
	if r := a.DecideOpen("127.0.0.1", 22); !strings.Contains(r.Message, "127.0.0.1:22") || r.Reason != "permitopen" {
		t.Fatalf("%+v", r)
	}
}

// BenchmarkOn is the decision's cost per request: a signed-in identity
// with three rules, one instance, every action.
func BenchmarkOn(b *testing.B) {
	no := false
	id, _ := Policies{
		{Groups: []string{"ops"}, Instances: []string{"web*"}},
		{Groups: []string{"ops"}, Instances: []string{"db*"}, ReadOnly: true},
		{Groups: []string{"ops"}, Instances: []string{"cache*"}, PortForwarding: &no, Files: "download"},
		{Groups: []string{"ops"}, Instances: []string{"mq*"}, AgentForwarding: &no},
	}.Identity("alice@example.com", []string{"ops"}, true)
	for b.Loop() {
		a := id.On("db-primary-1", Switches{})
		for act := range actions {
			_ = a.Decide(act)
		}
	}
}

// TestDecideListen: where ssh -R may listen, as OpenSSH's sshd with
// GatewayPorts no and permitlisten=: the loopback whatever was asked
// unless an entry names the host; with entries, only their ports; unix
// sockets only without them; every refusal of Decide(Forward) first.
func TestDecideListen(t *testing.T) {
	key := func(gs ...Grant) Access { return Identity{Kind: KindKey, Grants: gs}.On("web1", Switches{}) }
	cases := []struct {
		name   string
		a      Access
		host   string
		port   int
		bind   string // "" refused
		reason string
	}{
		{"any port, loopback", key(Grant{}), "", 8080, "127.0.0.1", ""},
		{"localhost", key(Grant{}), "localhost", 0, "127.0.0.1", ""},
		{"::1", key(Grant{}), "::1", 9000, "::1", ""},
		{"all interfaces asked: loopback", key(Grant{}), "0.0.0.0", 8080, "127.0.0.1", ""},
		{"permitlisten port", key(Grant{PermitListen: []string{":8080"}}), "", 8080, "127.0.0.1", ""},
		{"permitlisten other port", key(Grant{PermitListen: []string{":8080"}}), "", 8081, "", "permitlisten"},
		{"permitlisten port 0 needs *", key(Grant{PermitListen: []string{":8080"}}), "", 0, "", "permitlisten"},
		{"permitlisten *", key(Grant{PermitListen: []string{":*"}}), "", 0, "127.0.0.1", ""},
		{"permitlisten host", key(Grant{PermitListen: []string{"0.0.0.0:8080"}}), "0.0.0.0", 8080, "0.0.0.0", ""},
		{"permitlisten any host", key(Grant{PermitListen: []string{"*:8080"}}), "10.0.0.5", 8080, "10.0.0.5", ""},
		{"permitlisten host-less, host asked", key(Grant{PermitListen: []string{":8080"}}), "0.0.0.0", 8080, "127.0.0.1", ""},
		{"union with an unlimited grant", key(Grant{PermitListen: []string{":8080"}}, Grant{}), "", 9, "127.0.0.1", ""},
		{"read-only", key(Grant{ReadOnly: true}), "", 8080, "", "read-only key"},
		{"no-port-forwarding", key(Grant{NoPortForwarding: true}), "", 8080, "", "no-port-forwarding key"},
		{"forwarding off", Identity{Kind: KindKey, Grants: []Grant{{}}}.On("web1", Switches{NoPortForwarding: true}), "", 8080, "", "port forwarding off"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bind, r := tc.a.DecideListen(tc.host, tc.port)
			if bind != tc.bind || (r == nil) != (tc.reason == "") || r != nil && (r.Reason != tc.reason || r.Message == "") {
				t.Fatalf("DecideListen(%q, %d) = %q, %+v; want %q, reason %q", tc.host, tc.port, bind, r, tc.bind, tc.reason)
			}
		})
	}
	if r := key(Grant{PermitListen: []string{":8080"}}).DecideListenPath(); r == nil || r.Reason != "permitlisten" {
		t.Errorf("a unix listener with permitlisten=: %+v", r)
	}
	if r := key(Grant{}).DecideListenPath(); r != nil {
		t.Errorf("a unix listener: %+v", r)
	}
	if r := key(Grant{PermitOpen: []string{"db:5432"}}).DecideOpenPath(); r == nil || r.Reason != "permitopen" {
		t.Errorf("a unix socket target with permitopen=: %+v", r)
	}
	if r := key(Grant{ReadOnly: true}).DecideOpenPath(); r == nil || r.Reason != "read-only key" {
		t.Errorf("a unix socket target, read-only: %+v", r)
	}
}

// TestParsePermitListen reads permitlisten= values as OpenSSH does.
func TestParsePermitListen(t *testing.T) {
	for in, want := range map[string]string{"8080": ":8080", "*": ":*", "localhost:22": "localhost:22", "0.0.0.0:08080": "0.0.0.0:8080", "[::1]:9": "[::1]:9", "*:*": "*:*"} {
		if got, err := parsePermitListen(in); err != nil || got != want {
			t.Errorf("parsePermitListen(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "70000", "host:", "a b:1", "[::1"} {
		if got, err := parsePermitListen(in); err == nil {
			t.Errorf("parsePermitListen(%q) = %q, want an error", in, got)
		}
	}
}
