package keys

import "testing"

func TestPoliciesUnionAndReadOnlyPerInstance(t *testing.T) {
	no := false
	p := Policies{
		{Groups: []string{"admins"}, Instances: []string{"web*"}},
		{Groups: []string{"users"}, Instances: []string{"*"}, ReadOnly: true, PortForwarding: &no},
		{Emails: []string{"Carol@Example.com"}, Instances: []string{"db1"}},
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	alice, ok := p.Identity("alice@example.com", []string{"users", "admins"}, true)
	if !ok || alice.Name != "alice@example.com" || alice.Kind != KindSignIn {
		t.Fatalf("alice: %+v, %v", alice, ok)
	}
	for inst, rw := range map[string]bool{"web1": true, "db1": false} {
		a := alice.On(inst, Switches{})
		if !a.Use || a.Write != rw || a.Forward != rw {
			t.Errorf("alice on %s: %+v; want write and forward %v", inst, a, rw)
		}
	}
	bob, _ := p.Identity("bob@example.com", []string{"users"}, true)
	if a := bob.On("web1", Switches{}); !a.Use || a.Write || a.Forward || !bob.ReadOnlyEverywhere() {
		t.Errorf("bob: %+v", a)
	}
	carol, ok := p.Identity("carol@example.com", nil, true)
	if !ok || !carol.May("db1") || carol.May("web1") || !carol.On("db1", Switches{}).Write {
		t.Errorf("carol: %+v", carol)
	}
	if _, ok := p.Identity("eve@example.com", []string{"guests"}, true); ok {
		t.Error("an identity no rule matches got access")
	}
	if err := (Policies{{Instances: []string{"*"}}}).Check(); err == nil {
		t.Error("a rule without groups or emails was accepted")
	}
	if err := (Policies{{Groups: []string{"a"}, Instances: []string{"["}}}).Check(); err == nil {
		t.Error("a bad pattern was accepted")
	}
}

// TestPoliciesEmailsNeedVerified: an emails: rule matches only an email
// the provider marked verified (red team round 4, L5); groups rules
// match either way.
func TestPoliciesEmailsNeedVerified(t *testing.T) {
	p := Policies{
		{Emails: []string{"auditor@example.com"}, Instances: []string{"*"}},
		{Groups: []string{"users"}, Instances: []string{"web*"}},
	}
	if _, ok := p.Identity("auditor@example.com", nil, false); ok {
		t.Error("an unverified email matched an emails: rule")
	}
	if id, ok := p.Identity("auditor@example.com", []string{"users"}, false); !ok || id.May("db1") || !id.May("web1") {
		t.Errorf("unverified, in a group: %+v %v; want the group's rule only", id, ok)
	}
	if id, ok := p.Identity("auditor@example.com", nil, true); !ok || !id.May("db1") {
		t.Errorf("verified: %+v %v", id, ok)
	}
}
