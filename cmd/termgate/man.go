package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// termgate --help-man writes the manual page termgate(1) in roff, from
// the same definitions as --help (`make man` writes docs/termgate.1).

// manDefaults are defaults that depend on where termgate runs, written
// as the rule rather than this machine's value.
var manDefaults = map[string]string{
	"state-dir": "$XDG_STATE_HOME/termgate, else ~/.local/state/termgate, else /var/lib/termgate",
}

func writeMan(w io.Writer, fs *pflag.FlagSet) {
	var b strings.Builder
	source := "termgate" // docs/termgate.1 (make man) is not stamped
	if version != "dev" {
		source += " " + version
	}
	fmt.Fprintf(&b, ".TH TERMGATE 1 \"\" \"%s\" \"User Commands\"\n", roff(source))
	// No hyphenation, ragged right: flag and variable names stay whole.
	b.WriteString(`.nh
.ad l
.SH NAME
termgate \- SSH and WebSocket gateway to persistent shells in containers
.SH SYNOPSIS
.B termgate
[\fB\-\-config\fR \fIFILE\fR] [\fIFLAG\fR]...
.br
.B termgate completion
.BR bash | zsh | fish
.br
.B termgate \-\-version
.SH DESCRIPTION
.B termgate
serves the running Docker containers (Kubernetes pods with
.BR "\-\-backend kubernetes" ,
local shells with
.BR "\-\-backend local" )
over SSH and WebSocket.
.B "ssh \-t \-p 2222 INSTANCE@HOST"
or the browser page attaches to the instance's persistent shell: it
outlives its clients, a reattach gets the screen back, and a session with
no client is reaped after
.BR \-\-idle\-timeout .
.PP
.B "termgate completion"
prints a completion script for bash, zsh or fish.
.SH OPTIONS
`)
	for _, g := range flagGroups {
		fmt.Fprintf(&b, ".SS %s\n", roff(g.title))
		for _, name := range g.flags {
			f := fs.Lookup(name)
			b.WriteString(".TP\n")
			if f.Shorthand != "" {
				fmt.Fprintf(&b, "\\fB\\-%s\\fR, ", f.Shorthand)
			}
			fmt.Fprintf(&b, "\\fB\\-\\-%s\\fR", roff(f.Name))
			if v := valueName(f); v != "" {
				fmt.Fprintf(&b, " \\fI%s\\fR", v)
			}
			note := defaultNote(f)
			if d, ok := manDefaults[name]; ok {
				note = " (default " + d + ")"
			}
			fmt.Fprintf(&b, "\n%s\n", roffLine(f.Usage+note))
		}
	}
	b.WriteString(`.SH ENVIRONMENT
Every flag also reads
.BI TERMGATE_ FLAG_IN_UPPER_SNAKE
from the environment:
.B \-\-idle\-timeout
reads
.BR TERMGATE_IDLE_TIMEOUT ,
.B \-\-config
reads
.BR TERMGATE_CONFIG .
A flag wins over the environment, which wins over the config file.
The variables:
`)
	b.WriteString(roffLine(strings.Join(envNames(fs), ", ")) + ".\n")
	b.WriteString(`.TP
.B DOCKER_HOST
the Docker engine of
.BR "\-\-backend docker" .
.TP
.B KUBECONFIG
the kubeconfig of
.BR "\-\-backend kubernetes" .
.SH FILES
.TP
.I config.yaml
given with
.BR \-\-config :
a YAML mapping whose keys are the flag names, for example
.RS
.nf
ssh\-addr: "127.0.0.1:2222"
idle\-timeout: 45m
durable: true
allowed\-origins: [https://ops.example.com]
.fi
.RE
Lists take a YAML sequence or a comma\-separated string. An unknown key or
a bad value is refused at start with the file's line.
.TP
.I <state\-dir>/ssh_host_ed25519_key
the SSH host key, created on first start;
.B ssh\-keygen \-lf
prints the fingerprint the start\-up lines show.
.TP
.I <state\-dir>/authorized_keys
the OpenSSH public keys allowed in, with options such as
.B instances="web*"
and
.BR read\-only .
.TP
.I <state\-dir>/api_token
the HTTP and WebSocket bearer tokens.
.SH EXIT STATUS
0 when the gateway stopped on SIGTERM or SIGINT,
1 when it could not start or serve,
2 for a bad flag, variable or config file.
.SH EXAMPLES
.nf
termgate \-\-state\-dir ./state
termgate \-\-instance\-label termgate.instance \-\-durable \-\-record\-dir /var/lib/termgate/rec
TERMGATE_IDLE_TIMEOUT=2h termgate \-\-config /etc/termgate/config.yaml
source <(termgate completion bash)
.fi
.SH SEE ALSO
.BR ssh (1),
.BR sftp (1),
.BR docker (1),
.BR sshd (8)
`)
	io.WriteString(w, b.String())
}

// roff escapes text for roff: backslashes and dashes.
func roff(s string) string {
	return strings.NewReplacer(`\`, `\e`, `-`, `\-`).Replace(s)
}

// roffLine is roff(s) as a text line: one starting with . or ' would be
// read as a request.
func roffLine(s string) string {
	s = roff(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
