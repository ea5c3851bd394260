package main

import (
	"strings"
	"testing"

	"github.com/termgate/termgate/keys"
)

// TestConfigPolicies: policies: in the config file become keys.Policies;
// --oidc-issuer needs --public-url and policies, and policies need it.
func TestConfigPolicies(t *testing.T) {
	p := writeConfig(t, "oidc-issuer: http://127.0.0.1:5556/dex\noidc-client-id: termgate-public\npolicies:\n  - groups: [termgate-admins]\n    instances: [\"*\"]\n  - {emails: [bob@example.com], instances: [web*], read-only: true, port-forwarding: false, logins: [app, deploy]}\n")
	o, err := parseFlags([]string{"--config", p}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.policies) != 2 || o.policies[0].Groups[0] != "termgate-admins" || !o.policies[1].ReadOnly || *o.policies[1].PortForwarding ||
		strings.Join(o.policies[1].Logins, ",") != "app,deploy" {
		t.Fatalf("policies %+v", o.policies)
	}
	if _, _, err := signIn(o); err == nil || !strings.Contains(err.Error(), "needs --public-url") {
		t.Fatalf("without --public-url: %v", err)
	}
	o.publicURL = "https://ops.example.com"
	prov, https, err := signIn(o)
	if err != nil || prov == nil || !https {
		t.Fatalf("signIn: %v, %v", prov, err)
	}
	o.policies = nil
	if _, _, err := signIn(o); err == nil || !strings.Contains(err.Error(), "without policies") {
		t.Fatalf("without policies: %v", err)
	}
	o.oidcIssuer, o.policies = "", prov2policies()
	if _, _, err := signIn(o); err == nil || !strings.Contains(err.Error(), "no --oidc-issuer") {
		t.Fatalf("policies without an issuer: %v", err)
	}
}

func prov2policies() keys.Policies { return keys.Policies{{Groups: []string{"x"}}} }
