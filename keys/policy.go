package keys

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Policies map signed-in identities (OpenID Connect: an email and groups)
// to what keys and tokens already express, in the same Identity: the
// instances they may use, read-only or not, port forwarding. An identity
// gets the union of the rules it matches, read-only only where every
// matching rule that covers the instance says so; no rule, no access
// (contract, "Single sign-on"). The rules are the config file's policies:
// list.
type Policies []PolicyRule

// PolicyRule is one entry of policies:. A rule matches an identity in one
// of Groups or whose email is one of Emails (compared case-insensitively).
type PolicyRule struct {
	Groups []string `yaml:"groups"`
	Emails []string `yaml:"emails"`
	// Instances are path.Match patterns; empty means every instance.
	Instances []string `yaml:"instances"`
	ReadOnly  bool     `yaml:"read-only"`
	// PortForwarding false refuses forwarding to the identities this rule
	// alone covers (default: allowed, as for keys).
	PortForwarding *bool `yaml:"port-forwarding"`
	// AgentForwarding false refuses the clients' agents (ssh -A) to the
	// identities this rule alone covers (default: allowed, as for keys).
	AgentForwarding *bool `yaml:"agent-forwarding"`
	// Files is "download" to allow reading files but not writing them;
	// empty allows both.
	Files string `yaml:"files"`
	// Logins are the instances' users the rule allows (logins.go); "*"
	// any; empty the default user only.
	Logins []string `yaml:"logins"`
}

// Check refuses rules that can never match or hold a bad pattern; the
// error names the rule by its position (from 1).
func (p Policies) Check() error {
	for i, r := range p {
		if len(r.Groups) == 0 && len(r.Emails) == 0 {
			return fmt.Errorf("policies rule %d: it needs groups or emails (a rule for everyone would let any account of the provider in)", i+1)
		}
		for _, pat := range r.Instances {
			if _, err := path.Match(pat, "x"); err != nil {
				return fmt.Errorf("policies rule %d: instance pattern %q: %v", i+1, pat, err)
			}
		}
		if len(r.Logins) > 0 {
			if _, err := parseLogins(strings.Join(r.Logins, ",")); err != nil {
				return fmt.Errorf("policies rule %d: %v", i+1, err)
			}
		}
		if r.Files != "" {
			if _, err := parseFiles(r.Files); err != nil {
				return fmt.Errorf("policies rule %d: %v", i+1, err)
			}
		}
	}
	return nil
}

// Identity is what the identity named email, in groups, may do: a grant
// per rule it matches (On merges them per instance); ok false when no rule
// matches it. An emails: rule matches only when the provider marked the
// email verified (emailVerified); groups rules either way.
func (p Policies) Identity(email string, groups []string, emailVerified bool) (Identity, bool) {
	id := Identity{Name: email, Kind: KindSignIn}
	match := email
	if !emailVerified {
		match = "" // matches no emails: rule
	}
	for _, r := range p {
		if !r.matches(match, groups) {
			continue
		}
		files, _ := parseFiles(r.Files) // FilesAll when empty; Check refused a bad value
		id.Grants = append(id.Grants, Grant{Instances: slices.Clone(r.Instances), ReadOnly: r.ReadOnly,
			NoPortForwarding: r.PortForwarding != nil && !*r.PortForwarding, Files: files, Logins: slices.Clone(r.Logins),
			NoAgentForwarding: r.AgentForwarding != nil && !*r.AgentForwarding})
	}
	if len(id.Grants) == 0 {
		return Identity{}, false
	}
	return id, true
}

func (r PolicyRule) matches(email string, groups []string) bool {
	for _, e := range r.Emails {
		if email != "" && strings.EqualFold(e, email) {
			return true
		}
	}
	for _, g := range r.Groups {
		if slices.Contains(groups, g) {
			return true
		}
	}
	return false
}
