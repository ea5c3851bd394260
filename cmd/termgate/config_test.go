package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeConfig writes a config file into a test directory and returns its
// path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigPrecedence: for a duration, a bool and a list, the file gives
// a value, the environment overrides the file and a flag overrides both
// (CONTRACT.md "Build and run").
func TestConfigPrecedence(t *testing.T) {
	cfg := writeConfig(t, `# the file's values
idle-timeout: 45m
durable: true
allowed-origins:
  - https://file.example
  - https://file2.example
ssh-addr: "127.0.0.1:2222"
`)
	type want struct {
		idle    time.Duration
		durable bool
		origins []string
	}
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want want
	}{
		{"defaults without a file", nil, nil, want{30 * time.Minute, false, nil}},
		{"the file", []string{"--config", cfg}, nil, want{45 * time.Minute, true, []string{"https://file.example", "https://file2.example"}}},
		{"TERMGATE_CONFIG names the file", nil, map[string]string{"TERMGATE_CONFIG": cfg}, want{45 * time.Minute, true, []string{"https://file.example", "https://file2.example"}}},
		{"the environment over the file", []string{"--config", cfg}, map[string]string{
			"TERMGATE_IDLE_TIMEOUT": "2h", "TERMGATE_DURABLE": "false", "TERMGATE_ALLOWED_ORIGINS": "https://env.example",
		}, want{2 * time.Hour, false, []string{"https://env.example"}}},
		{"a flag over the environment and the file", []string{"--config", cfg, "--idle-timeout", "90s", "--durable=false", "--allowed-origins", "https://flag.example,https://flag2.example"}, map[string]string{
			"TERMGATE_IDLE_TIMEOUT": "2h", "TERMGATE_DURABLE": "true", "TERMGATE_ALLOWED_ORIGINS": "https://env.example",
		}, want{90 * time.Second, false, []string{"https://flag.example", "https://flag2.example"}}},
		{"a flag over the file, the environment silent", []string{"--config", cfg, "--durable=false"}, nil,
			want{45 * time.Minute, false, []string{"https://file.example", "https://file2.example"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if o.idleTimeout != tt.want.idle || o.durable != tt.want.durable || !slices.Equal(o.allowedOrigins, tt.want.origins) {
				t.Errorf("idle %v durable %v origins %q; want %+v", o.idleTimeout, o.durable, o.allowedOrigins, tt.want)
			}
		})
	}
	o, err := parseFlags([]string{"--config", cfg}, env(nil))
	if err != nil || o.sshAddr != "127.0.0.1:2222" {
		t.Errorf("ssh-addr from the file: %+v, %v", o, err)
	}
}

// TestConfigValueKinds: sizes, numbers and comma strings read as their
// flags read them; an empty file is no settings.
func TestConfigValueKinds(t *testing.T) {
	o, err := parseFlags([]string{"--config", writeConfig(t, `
buffer-size: 1MiB
http-rate-limit: 2.5
local-instances: "a, b"
public-host: [gw.example, "gw2.example:2222"]
backend: local
record-dir: /var/lib/termgate/rec
record-input: true
`)}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.bufferSize != 1<<20 || o.httpRateLimit != 2.5 || !slices.Equal(o.localInstances, []string{"a", "b"}) ||
		o.publicHost != "gw.example,gw2.example:2222" || o.backend != "local" || !o.recordInput {
		t.Errorf("parsed %+v", o)
	}
	for _, text := range []string{"", "# nothing yet\n", "---\n", "idle-timeout: 1m\n---\n"} {
		if _, err := parseFlags([]string{"--config", writeConfig(t, text)}, env(nil)); err != nil {
			t.Errorf("config %q: %v", text, err)
		}
	}
}

// TestConfigRefusesWithTheLine: an unknown key and a bad value (also one
// a flag overrides) are refused, naming the file, the line and the fix.
func TestConfigRefusesWithTheLine(t *testing.T) {
	for _, tt := range []struct {
		text string
		args []string
		want string
	}{
		{"ssh-addr: :2222\n\n# comment\nidle-timeout: 5\n", nil, `line 4: idle-timeout: "5" is not a duration: it needs a unit; use 5s, 5m or a duration such as 30m`},
		{"idle-timeout: soon\n", []string{"--idle-timeout", "1m"}, `line 1: idle-timeout: "soon" is not a duration`},
		{"durable: true\nidle-timout: 5m\n", nil, `line 2: unknown key "idle-timout"; did you mean idle-timeout?`},
		{"sshaddr: x\n", nil, `line 1: unknown key "sshaddr"; did you mean ssh-addr?`},
		{"flavour: vanilla\n", nil, `line 1: unknown key "flavour" (the keys are the flag names`},
		{"--durable: true\n", nil, "line 1: unknown key \"--durable\": keys are the flag names without dashes, such as durable"},
		{"durable: yes\n", nil, `line 1: durable: "yes" is not true or false`},
		{"buffer-size: 4KiB\n", nil, "line 1: buffer-size: \"4KiB\" is too small"},
		{"backend: k8s\n", nil, "line 1: backend: \"k8s\" is not a backend: use docker, kubernetes or local"},
		{"log-level:\n", nil, "line 1: log-level: has no value"},
		{"idle-timeout: [1m, 2m]\n", nil, "line 1: idle-timeout: takes one value, not a list"},
		{"ssh-addr:\n  host: x\n", nil, "line 2: ssh-addr: takes one value, not a mapping"},
		{"idle-timeout: 1m\nidle-timeout: 2m\n", nil, "line 2: idle-timeout is given twice (also on line 1)"},
		{"policies:\n  - {groups: [ops], instances: ['*'], admin: true}\n", nil, `line 2: policies rule: unknown key "admin"`},
		{"policies:\n  - {instances: ['*']}\n", nil, "line 2: it needs groups or emails"},
		{"policies:\n  - {groups: [ops], logins: app}\n", nil, "line 2: policies rule: logins: takes a list, not one value: write logins: [app]"},
		{"policies:\n  - {groups: [ops], logins: ['a:b']}\n", nil, `line 2: logins=: login "a:b" is not a user name`},
		{"policies: ops\n", nil, "line 1: policies: must be a list"},
		{"config: other.yaml\n", nil, "line 1: config: a config file cannot name another"},
		{"version: true\n", nil, "line 1: version is not a setting"},
		{"- idle-timeout\n", nil, "line 1: the file must be a mapping of flag names to values"},
		{"idle-timeout: [\n", nil, "not valid YAML"},
		{"idle-timeout: 1m\n---\ndurable: true\n", nil, "line 2: a second YAML document"},
		{"IDLE_TIMEOUT: 1m\n", nil, `line 1: unknown key "IDLE_TIMEOUT"; did you mean idle-timeout?`},
	} {
		p := writeConfig(t, tt.text)
		_, err := parseFlags(append([]string{"--config", p}, tt.args...), env(nil))
		if err == nil || !strings.Contains(err.Error(), p+" "+tt.want) && !strings.Contains(err.Error(), p+": "+tt.want) {
			t.Errorf("config %q: %v\nwant %q", tt.text, err, tt.want)
		}
	}
}

// TestConfigMissingFile: a --config (or TERMGATE_CONFIG) that cannot be
// read is refused, naming where it was given.
func TestConfigMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := parseFlags([]string{"--config", missing}, env(nil)); err == nil || !strings.Contains(err.Error(), "--config "+missing) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("--config missing: %v", err)
	}
	if _, err := parseFlags(nil, env(map[string]string{"TERMGATE_CONFIG": missing})); err == nil || !strings.Contains(err.Error(), "TERMGATE_CONFIG "+missing) {
		t.Errorf("TERMGATE_CONFIG missing: %v", err)
	}
}

// TestREADMEConfigExample: the example files of the README and of
// docs/CONFIGURATION.md are ones termgate accepts, and they mean what the
// text says.
func TestREADMEConfigExample(t *testing.T) {
	short := yamlExample(t, "../../README.md", "\n## Configuration\n")
	o, err := parseFlags([]string{"--config", writeConfig(t, short)}, env(nil))
	if err != nil {
		t.Fatalf("the README's example: %v", err)
	}
	if o.idleTimeout != 45*time.Minute || !o.durable || o.publicHost != "gateway.example.com" {
		t.Errorf("the README's example read as %+v", o)
	}
	block := yamlExample(t, "../../docs/CONFIGURATION.md", "# Configuration\n")
	cfg := writeConfig(t, block)
	o, err = parseFlags([]string{"--config", cfg}, env(nil))
	if err != nil {
		t.Fatalf("docs/CONFIGURATION.md's example: %v", err)
	}
	if o.idleTimeout != 45*time.Minute || !o.durable || !slices.Equal(o.allowedOrigins, []string{"https://ops.example.com"}) || o.logFormat != "json" {
		t.Errorf("docs/CONFIGURATION.md's example read as %+v", o)
	}
	o, err = parseFlags([]string{"--config", cfg, "--durable=false"}, env(map[string]string{"TERMGATE_IDLE_TIMEOUT": "2h"}))
	if err != nil || o.idleTimeout != 2*time.Hour || o.durable {
		t.Errorf("the README's override example: %+v, %v", o, err)
	}
}

// yamlExample is the first yaml code block of file after the heading.
func yamlExample(t *testing.T, file, heading string) string {
	t.Helper()
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), heading)
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, closed := strings.Cut(block, "```")
	if !ok || !closed {
		t.Fatalf("no ```yaml block after %q in %s", heading, file)
	}
	return block
}

// TestConfigErrorsNameTheLine (issue 40 item 2): an indented key is
// reported on its own line, not where YAML's mapping began; policies
// with one value where a list belongs gets a sentence, not YAML's
// "cannot unmarshal !!str".
func TestConfigErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"# a comment\nssh-addr: 127.0.0.1:2222\n#\n# more\n\n   instance-label: termgate\n",
			`line 6: instance-label: is indented: keys start at the beginning of the line`},
		{"policies:\n  - groups: ops\n    instances: [\"web*\"]\n",
			`line 2: policies rule: groups: takes a list, not one value: write groups: [ops]`},
	} {
		p := writeConfig(t, tc.text)
		_, err := parseFlags([]string{"--config", p}, env(nil))
		if err == nil || !strings.Contains(err.Error(), p+" "+tc.want) {
			t.Errorf("config %q: error %v, want %q", tc.text, err, tc.want)
		}
	}
}
