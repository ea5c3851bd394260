package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// helpGroup is a heading of --help and the man page, and its flags in
// the order shown. TestHelpGroupsCoverEveryFlag keeps every flag in
// exactly one group.
type helpGroup struct {
	title string
	flags []string
}

var flagGroups = []helpGroup{
	{"General", []string{"help", "version", "config"}},
	{"Listeners", []string{"ssh-addr", "http-addr", "public-host", "allowed-origins", "tls-cert", "tls-key", "http-rate-limit", "ssh-compat-algorithms"}},
	{"State and authentication", []string{"state-dir", "host-key", "authorized-keys", "token-file", "trusted-user-ca-keys"}},
	{"Single sign-on", []string{"oidc-issuer", "oidc-client-id", "oidc-client-secret-file", "oidc-groups-claim", "oidc-scopes", "oidc-session-max", "oidc-key-ttl", "oidc-ssh", "signin-state-secret", "public-url"}},
	{"Backend", []string{"backend", "instance-label", "shell", "toolbox", "kubeconfig", "kube-namespace", "local-instances"}},
	{"Sessions", []string{"idle-timeout", "max-keep", "max-sessions-per-instance", "max-named-sessions", "buffer-size", "replay", "scrollback", "size-policy", "notify-joins", "shutdown-timeout"}},
	{"Recording", []string{"record-dir", "record-input", "record-max-size", "record-max-total"}},
	{"Durable sessions", []string{"durable"}},
	{"File transfer and port forwarding", []string{"file-transfer", "max-upload-size", "port-forwarding", "agent-forwarding", "forward-idle-timeout", "accept-env"}},
	{"Logging", []string{"log-level", "log-format", "audit-log"}},
}

const helpSynopsis = `Usage: termgate [--config FILE] [FLAG]...
       termgate completion bash|zsh|fish
       termgate --version

An SSH and WebSocket gateway into Docker containers, Kubernetes pods or
local shells: ssh -t -p 2222 INSTANCE@HOST, or the browser, attaches to the
instance's persistent shell.
`

// helpEnvironment is the section on the other sources of settings.
const helpEnvironment = `Environment and config file:
  Every flag also reads TERMGATE_<FLAG_IN_UPPER_SNAKE> from the environment
  (--idle-timeout: TERMGATE_IDLE_TIMEOUT=45m, --durable: TERMGATE_DURABLE=true).
  --config FILE (or TERMGATE_CONFIG) reads the same settings from a YAML file
  whose keys are the flag names (idle-timeout: 45m; lists as a YAML sequence
  or a comma-separated string). A flag wins over the environment, which wins
  over the file; an unknown key or a bad value is refused with its line.
  The docker backend honours DOCKER_HOST, the kubernetes one KUBECONFIG.
`

const helpExamples = `Examples:
  termgate --state-dir ./state
      serve the running Docker containers; the state (host key, token,
      authorized_keys seeded from ~/.ssh/*.pub) goes to ./state
  termgate --instance-label termgate.instance --durable --record-dir /var/lib/termgate/rec
      only labelled containers, shells that outlive restarts, recordings
  TERMGATE_IDLE_TIMEOUT=2h termgate --config /etc/termgate/config.yaml
      settings from a file, one of them from the environment
  termgate --backend local --ssh-addr 127.0.0.1:2222
      local shells, to try it without Docker
  source <(termgate completion bash)
      complete termgate's flags in bash

Durations are Go's (90s, 30m, 1h30m); sizes are bytes or KiB/MiB/GiB.
The full documentation is the README and the termgate(1) manual page.
`

// writeHelp writes --help: the synopsis, the flags by group with their
// defaults, the environment and config file, and examples.
func writeHelp(w io.Writer, fs *pflag.FlagSet) {
	var b strings.Builder
	b.WriteString(helpSynopsis)
	for _, g := range flagGroups {
		fmt.Fprintf(&b, "\n%s:\n", g.title)
		for _, name := range g.flags {
			writeFlagHelp(&b, fs.Lookup(name))
		}
	}
	b.WriteString("\n" + helpEnvironment)
	b.WriteString("  The variables:\n")
	for _, l := range wrap(strings.Join(envNames(fs), " "), helpWidth-4) {
		b.WriteString("    " + l + "\n")
	}
	b.WriteString("\n" + helpExamples)
	io.WriteString(w, b.String())
}

// envNames are the TERMGATE_ variables, one per setting, in --help's
// order.
func envNames(fs *pflag.FlagSet) []string {
	var names []string
	for _, g := range flagGroups {
		for _, name := range g.flags {
			if !notSettings[name] {
				names = append(names, envName(name))
			}
		}
	}
	return names
}

// The columns of a flag's line: the name from 2, the text from 32 (or on
// the next line when the name is longer), wrapped at 79.
const (
	helpIndent = 32
	helpWidth  = 79
)

func writeFlagHelp(b *strings.Builder, f *pflag.Flag) {
	head := "  "
	if f.Shorthand != "" {
		head += "-" + f.Shorthand + ", "
	}
	head += "--" + f.Name
	if v := valueName(f); v != "" {
		head += " " + v
	}
	text := f.Usage + defaultNote(f)
	if len(head) >= helpIndent-1 {
		b.WriteString(head + "\n")
		head = ""
	}
	lines := wrap(text, helpWidth-helpIndent)
	for i, l := range lines {
		if i == 0 && head != "" {
			fmt.Fprintf(b, "%-*s%s\n", helpIndent, head, l)
			continue
		}
		fmt.Fprintf(b, "%*s%s\n", helpIndent, "", l)
	}
}

// defaultNote is " (default X)" when the default says something: not for
// switches that are off, empty strings or lists, which the text explains.
func defaultNote(f *pflag.Flag) string {
	switch {
	case f.DefValue == "", f.DefValue == "false", f.Name == "help", f.Name == "version":
		return ""
	case f.Value.Type() == "bool":
		return fmt.Sprintf(" (default true; --%s=false turns it off)", f.Name)
	}
	return fmt.Sprintf(" (default %s)", f.DefValue)
}

// wrap splits text into lines of at most width runes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) > width:
			lines = append(lines, line)
			line = w
		default:
			line += " " + w
		}
	}
	return append(lines, line)
}

// printHelp writes --help, or the manual page for --help-man.
func printHelp(w io.Writer, o *options) {
	fs := newFlagSet(&options{}, &sizeFlags{})
	if o.helpMan {
		writeMan(w, fs)
		return
	}
	writeHelp(w, fs)
}
