package keys

import (
	"strings"
	"testing"
)

// TestOnDecideLogin is the login column of the decision's table
// (TestOnDecide): credential × asked login → the login it runs as, or a
// refusal whose message says what the credential may use.
func TestOnDecideLogin(t *testing.T) {
	key := func(logins ...string) Identity { return Identity{Kind: KindKey, Grants: []Grant{{Logins: logins}}} }
	signIn, _ := Policies{
		{Groups: []string{"ops"}, Instances: []string{"web*"}, Logins: []string{"app"}},
		{Groups: []string{"ops"}, Instances: []string{"web*"}, ReadOnly: true},
		{Groups: []string{"dev"}, Instances: []string{"db*"}, Logins: []string{"*"}},
	}.Identity("alice@example.com", []string{"ops", "dev"}, true)
	cases := []struct {
		name  string
		id    Identity
		inst  string
		asked string
		want  string // the login it runs as
		ok    bool
		says  string // in the refusal's message
	}{
		{"no option, none asked", key(), "web1", "", "", true, ""},
		{"no option, app asked", key(), "web1", "app", "", false, "only the instance's default user"},
		{"no option, root asked", key(), "web1", "root", "", false, `"root"`},
		{"listed, none asked: the first", key("app", "deploy"), "web1", "", "app", true, ""},
		{"listed, second asked", key("app", "deploy"), "web1", "deploy", "deploy", true, ""},
		{"listed, root asked", key("app", "deploy"), "web1", "root", "", false, "app, deploy"},
		{"listed root", key("root"), "web1", "root", "root", true, ""},
		{"any, none asked: default user", key("*"), "web1", "", "", true, ""},
		{"any, root asked", key("*"), "web1", "root", "root", true, ""},
		{"any, uid asked", key("*"), "web1", "1000", "1000", true, ""},
		{"any, colon asked", key("*"), "web1", "a:b", "", false, "passwd"},
		{"any, newline asked", key("*"), "web1", "a\nb", "", false, "passwd"},
		{"any, dash asked", key("*"), "web1", "-c", "", false, "passwd"},
		{"instance not covered", Identity{Kind: KindKey, Grants: []Grant{{Instances: []string{"db*"}, Logins: []string{"*"}}}}, "web1", "app", "", false, "not found"},
		{"sign-in, rules union: first listed", signIn, "web1", "", "app", true, ""},
		{"sign-in, read-only rule adds the default user", signIn, "web1", "app", "app", true, ""},
		{"sign-in, other login", signIn, "web1", "deploy", "", false, "app (its logins= option) and the instance's default user"},
		{"sign-in, any rule", signIn, "db1", "postgres", "postgres", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, r := tc.id.On(tc.inst, Switches{}).DecideLogin(tc.asked)
			if (r == nil) != tc.ok || got != tc.want {
				t.Fatalf("DecideLogin(%q) = %q, %v; want %q, ok %v", tc.asked, got, r, tc.want, tc.ok)
			}
			if r != nil && (!strings.Contains(r.Message, tc.says) || r.Reason == "" || strings.ContainsAny(r.Message, "\n")) {
				t.Fatalf("refusal %+v does not say %q (on one line)", r, tc.says)
			}
		})
	}
}

// The three places a credential lists its logins, and what each refuses.
func TestLoginsOptions(t *testing.T) {
	o, _, err := parseOptions([]string{`logins="app,deploy"`})
	if err != nil || strings.Join(o.logins, ",") != "app,deploy" {
		t.Fatalf("authorized_keys: %v %v", o.logins, err)
	}
	for _, bad := range []string{`logins="a:b"`, `logins=""`, `logins="app,,x"`, `logins=app`, `logins="-x"`} {
		if _, _, err := parseOptions([]string{bad}); err == nil {
			t.Errorf("authorized_keys %s accepted", bad)
		}
	}
	if _, _, err := parseOptions([]string{`logins="a"`, `logins="b"`}); err == nil {
		t.Error("logins= twice accepted")
	}
	_, id, err := parseTokenLine("0123456789abcdef0123456789abcdef ci logins=app,* instances=web*")
	if err != nil || strings.Join(id.Grants[0].Logins, ",") != "app,*" {
		t.Fatalf("token: %+v %v", id, err)
	}
	for _, bad := range []string{"tok0123456789abcdef0123 logins=", "tok0123456789abcdef0123 logins=a/b", "tok0123456789abcdef0123 logins=a logins=b"} {
		if _, _, err := parseTokenLine(bad); err == nil {
			t.Errorf("token line %q accepted", bad)
		}
	}
	if err := (Policies{{Groups: []string{"g"}, Logins: []string{"a b"}}}).Check(); err == nil {
		t.Error("policy logins: [\"a b\"] accepted")
	}
	p := Policies{{Groups: []string{"g"}, Logins: []string{"app"}}}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	if id, _ := p.Identity("a@b", []string{"g"}, true); id.On("x", Switches{}).Login() != "app" {
		t.Fatalf("policy: %+v", id)
	}
	if d := Describe(Identity{Grants: []Grant{{Logins: []string{"app"}}}}); !strings.Contains(d, "logins app") {
		t.Errorf("Describe: %q", d)
	}
}

// TestIdentityLogins: what GET /api/whoami lists for the page's picker.
func TestIdentityLogins(t *testing.T) {
	cases := []struct {
		grants []Grant
		want   string
	}{
		{nil, ""},
		{[]Grant{{}}, ""},
		{[]Grant{{Logins: []string{"app", "deploy"}}}, "app,deploy"},
		{[]Grant{{Logins: []string{"*"}}}, "*"},
		{[]Grant{{Instances: []string{"web*"}, Logins: []string{"app", "*"}}, {Logins: []string{"deploy", "app"}}, {}}, "app,deploy,*"},
	}
	for _, tc := range cases {
		got := Identity{Kind: KindKey, Grants: tc.grants}.Logins()
		if got == nil || strings.Join(got, ",") != tc.want {
			t.Errorf("Logins of %+v = %#v, want [%s]", tc.grants, got, tc.want)
		}
	}
}
