package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/termgate/termgate/keys"
)

// The config file (--config FILE, CONTRACT.md "Build and run"): a YAML
// mapping whose keys are the flag names and whose values are what the
// flag would take (idle-timeout: 45m, durable: true); a list flag
// (allowed-origins, local-instances, public-host) takes a YAML sequence
// or the comma-separated string. It is read as a yaml.Node, not decoded
// into a struct, so that every error names the line it is about.

// configSections are the keys whose value is a structure of its own (a
// mapping, or a list of mappings) rather than one flag's value: the one
// place such a key is added, with the function that reads it into the
// options: policies: (CONTRACT.md "Single sign-on").
var configSections = map[string]func(path string, value *yaml.Node, o *options) error{
	"policies": readPolicies,
}

// reservedKeys are keys a later version gives a meaning: refused with
// the reason, not as a typo.
var reservedKeys = map[string]string{}

// readPolicies reads policies: a list of {groups, emails, instances,
// read-only, port-forwarding, agent-forwarding, files, logins} mappings; an unknown field is refused with
// its line.
func readPolicies(path string, v *yaml.Node, o *options) error {
	if v.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s line %d: policies: must be a list of rules such as - {groups: [ops], instances: [\"web*\"]}", path, v.Line)
	}
	for _, item := range v.Content {
		if item.Kind != yaml.MappingNode {
			return fmt.Errorf("%s line %d: a policies rule must be a mapping (groups, emails, instances, read-only, port-forwarding, agent-forwarding, files, logins)", path, item.Line)
		}
		for i := 0; i+1 < len(item.Content); i += 2 {
			switch k := item.Content[i].Value; k {
			case "groups", "emails", "instances", "read-only", "port-forwarding", "agent-forwarding", "files", "logins":
			default:
				return fmt.Errorf("%s line %d: policies rule: unknown key %q (known: groups, emails, instances, read-only, port-forwarding, agent-forwarding, files, logins)", path, item.Content[i].Line, k)
			}
		}
		for i := 0; i+1 < len(item.Content); i += 2 {
			k, v := item.Content[i].Value, item.Content[i+1]
			if (k == "groups" || k == "emails" || k == "instances" || k == "logins") && v.Kind != yaml.SequenceNode {
				example := "ops"
				if v.Kind == yaml.ScalarNode && v.Value != "" {
					example = v.Value
				}
				return fmt.Errorf("%s line %d: policies rule: %s: takes a list, not one value: write %s: [%s] (or one \"- %s\" line each under %s:)", path, v.Line, k, k, example, example, k)
			}
		}
		var r keys.PolicyRule
		if err := item.Decode(&r); err != nil {
			return fmt.Errorf("%s line %d: policies rule: %v", path, item.Line, err)
		}
		o.policies = append(o.policies, r)
		if err := (keys.Policies{r}).Check(); err != nil {
			return fmt.Errorf("%s line %d: %v", path, item.Line, strings.TrimPrefix(err.Error(), "policies rule 1: "))
		}
	}
	return nil
}

// configEntry is one key: value of the file.
type configEntry struct {
	key, value string
	line       int // of the value
}

// applyConfigFile reads the file named by --config (else TERMGATE_CONFIG)
// into fs, leaving the flags given on the command line alone (the
// environment is applied after it, over it); every value is checked on a
// scratch set first, so an overridden bad value is refused too.
func applyConfigFile(fs *pflag.FlagSet, o *options, onCommandLine map[string]bool, getenv func(string) string) error {
	path, from := o.config, "--config"
	if !onCommandLine["config"] {
		path, from = getenv(envName("config")), envName("config")
	}
	if path == "" {
		return nil
	}
	o.config = path
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w (give an existing YAML file, or drop %s)", from, path, err, from)
	}
	entries, err := readConfig(path, data, fs, o)
	if err != nil {
		return err
	}
	scratch := newFlagSet(&options{}, &sizeFlags{})
	for _, e := range entries {
		if err := scratch.Set(e.key, e.value); err != nil {
			return fmt.Errorf("%s line %d: %s: %q %v", path, e.line, e.key, e.value, valueError(err))
		}
		if !onCommandLine[e.key] {
			if err := fs.Set(e.key, e.value); err != nil { // cannot fail: the same check passed
				return fmt.Errorf("%s line %d: %s: %v", path, e.line, e.key, valueError(err))
			}
		}
	}
	return nil
}

// readConfig parses the file's keys and values; the sections
// (configSections) are read into o at once, the flag values returned.
func readConfig(path string, data []byte, fs *pflag.FlagSet, o *options) ([]configEntry, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, more yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, nil // empty
	case err != nil:
		if line, key := indentedKeyLine(data); line > 0 {
			return nil, fmt.Errorf("%s line %d: %s: is indented: keys start at the beginning of the line (remove the spaces before %s)", path, line, key, key)
		}
		return nil, fmt.Errorf("%s: not valid YAML: %w", path, err)
	}
	for {
		// A second document (after ---) would be silently ignored; an
		// empty one (a trailing ---) says nothing.
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || !emptyDocument(&more) {
			return nil, fmt.Errorf("%s line %d: a second YAML document; termgate reads one, so merge them", path, more.Line)
		}
	}
	if emptyDocument(&doc) {
		return nil, nil // only comments, or a bare ---
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s line %d: the file must be a mapping of flag names to values, such as idle-timeout: 45m", path, top.Line)
	}
	var entries []configEntry
	seen := map[string]int{}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], resolveAlias(top.Content[i+1])
		key := k.Value
		if prev, ok := seen[key]; ok {
			return nil, fmt.Errorf("%s line %d: %s is given twice (also on line %d); keep one", path, k.Line, key, prev)
		}
		seen[key] = k.Line
		if read, ok := configSections[key]; ok {
			if err := read(path, v, o); err != nil {
				return nil, err
			}
			continue
		}
		if why, ok := reservedKeys[key]; ok {
			return nil, fmt.Errorf("%s line %d: %s %s", path, k.Line, key, why)
		}
		f := fs.Lookup(key)
		switch {
		case key == "config":
			return nil, fmt.Errorf("%s line %d: config: a config file cannot name another; remove the line", path, k.Line)
		case f == nil && strings.HasPrefix(key, "-"):
			return nil, fmt.Errorf("%s line %d: unknown key %q: keys are the flag names without dashes, such as %s", path, k.Line, key, closestOrFirst(fs, key))
		case f != nil && (f.Hidden || notSettings[key]):
			return nil, fmt.Errorf("%s line %d: %s is not a setting (the flag acts at once); remove the line", path, k.Line, key)
		case f == nil:
			return nil, fmt.Errorf("%s line %d: unknown key %q%s (the keys are the flag names; termgate --help lists them)", path, k.Line, key, didYouMean(fs, key, ""))
		}
		value, err := configValue(f, v)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %s: %v", path, v.Line, key, err)
		}
		entries = append(entries, configEntry{key: key, value: value, line: v.Line})
	}
	return entries, nil
}

func closestOrFirst(fs *pflag.FlagSet, key string) string {
	if c := closestFlag(fs, key); c != "" {
		return c
	}
	return "idle-timeout"
}

// emptyDocument: a document of comments, or a bare --- (a null).
func emptyDocument(doc *yaml.Node) bool {
	return len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null"
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// configValue is the flag value a YAML value stands for: a scalar as
// written, a sequence of scalars for a list flag joined with commas.
func configValue(f *pflag.Flag, v *yaml.Node) (string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return "", fmt.Errorf("has no value: give one (%s: %s) or remove the line", f.Name, example(f))
		}
		return v.Value, nil
	case yaml.SequenceNode:
		if f.Value.Type() != "list" {
			return "", fmt.Errorf("takes one value, not a list (%s: %s)", f.Name, example(f))
		}
		items := make([]string, 0, len(v.Content))
		for _, it := range v.Content {
			it = resolveAlias(it)
			if it.Kind != yaml.ScalarNode || it.Tag == "!!null" {
				return "", fmt.Errorf("line %d: a list item must be a plain value, such as https://ops.example.com", it.Line)
			}
			items = append(items, it.Value)
		}
		return strings.Join(items, ","), nil
	}
	return "", fmt.Errorf("takes one value, not a mapping (%s: %s)", f.Name, example(f))
}

// example is a value to show in an error: the default, or a placeholder.
func example(f *pflag.Flag) string {
	switch {
	case f.Value.Type() == "bool":
		return "true"
	case f.DefValue != "":
		return f.DefValue
	}
	return strings.ToUpper(f.Value.Type())
}
