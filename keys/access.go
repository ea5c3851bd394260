package keys

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/termgate/termgate/internal/names"
)

// This file is the one access decision (contract, "One decision"): what a
// credential may do on one instance. Every listener asks Identity.On once
// per request, on the instance the request names, and every refusal, with
// the sentence the user reads and the reason the audit trail keeps, comes
// out of Access.Decide. Nothing else in termgate reads a credential's
// options to allow or refuse an action.

// Kind is what a credential is, for the sentences that name it.
type Kind uint8

const (
	// KindKey is an authorized_keys line.
	KindKey Kind = iota
	// KindCertificate is an SSH user certificate of a trusted CA.
	KindCertificate
	// KindToken is a token-file line (bearer header or login cookie).
	KindToken
	// KindSignIn is an identity signed in with single sign-on, in the
	// browser or through a key it approved.
	KindSignIn
)

// Noun is how sentences name the credential: "this key is read-only".
func (k Kind) Noun() string {
	switch k {
	case KindCertificate:
		return "certificate"
	case KindToken:
		return "token"
	case KindSignIn:
		return "sign-in"
	}
	return "key"
}

// Files limits the file transfers a grant allows.
type Files uint8

const (
	// FilesAll reads and writes (the default).
	FilesAll Files = iota
	// FilesDownload reads and never writes: files="download" (key
	// option), files=download (token option), files: download (policy).
	FilesDownload
)

// parseFiles reads the value of a files= option.
func parseFiles(v string) (Files, error) {
	switch v {
	case "download":
		return FilesDownload, nil
	}
	return FilesAll, fmt.Errorf("files=%q: the only value is download (reading files, never writing them)", displayName(v, 32))
}

// Grant is what one credential line or one policy rule gives: a key,
// certificate or token has one; a signed-in identity one per rule it
// matches. On merges the grants that cover an instance.
type Grant struct {
	// Instances are path.Match patterns; empty means every instance.
	Instances []string
	// ReadOnly makes the holder an observer ("Observers and recordings"):
	// it watches, and does nothing that changes the instance.
	ReadOnly bool
	// NoPTY refuses interactive terminals (no-pty, restrict; a
	// certificate without permit-pty); commands still run.
	NoPTY bool
	// NoPortForwarding refuses forwarding (no-port-forwarding, restrict,
	// a certificate without permit-port-forwarding, a policy's
	// port-forwarding: false).
	NoPortForwarding bool
	// PermitOpen are the targets of permitopen="HOST:PORT", as
	// net.JoinHostPort ("*" as HOST or PORT matches any); empty: any.
	PermitOpen []string
	// PermitListen are the listen addresses of permitlisten="[HOST:]PORT"
	// for ssh -R, as net.JoinHostPort (HOST "" when none was given: the
	// loopback; "*" as HOST or PORT matches any); empty: any port, on the
	// loopback.
	PermitListen []string
	// NoAgentForwarding refuses the client's agent (no-agent-forwarding,
	// restrict, a certificate without permit-agent-forwarding, a policy's
	// agent-forwarding: false).
	NoAgentForwarding bool
	// Files limits file transfers (files="download").
	Files Files
	// Logins are the instance's users the grant may be (logins.go):
	// nil the default user only, AnyLogin any.
	Logins []string
}

// Switches are the gateway-wide flags that take a right from every
// credential (--file-transfer=false, --port-forwarding=false,
// --agent-forwarding=false).
type Switches struct {
	NoFileTransfer    bool
	NoPortForwarding  bool
	NoAgentForwarding bool
}

// Action is something a credential may do on an instance.
type Action uint8

const (
	// Watch: attach and see the output, list, who, hand, log, recordings.
	Watch Action = iota
	// Terminal: attach with an interactive terminal.
	Terminal
	// Type: input and window size reach the shell.
	Type
	// Reset: kill the shell and start a new one.
	Reset
	// Command: run a command in the instance.
	Command
	// ReadFiles and WriteFiles: sftp, scp and the HTTP files routes.
	ReadFiles
	WriteFiles
	// Forward: ssh -L, -D, -W, -R (see also Access.DecideOpen,
	// DecideListen, DecideOpenPath, DecideListenPath).
	Forward
	// Keep: hold an idle session from reaping.
	Keep
	// Pin: pin the session's window size.
	Pin
	// GrantWrite: let an observer type.
	GrantWrite
	// RecordedInput: read what was typed in a recording.
	RecordedInput
	// Agent: the session's shell or the command may use the client's
	// forwarded agent (ssh -A).
	Agent
	actions // the number of actions, for tables
)

// Actions lists every Action, for tables that test them all.
func Actions() []Action {
	out := make([]Action, actions)
	for i := range out {
		out[i] = Action(i)
	}
	return out
}

var actionNames = [actions]string{"watch", "terminal", "type", "reset", "command", "read files", "write files", "forward", "keep", "pin", "grant", "recorded input", "agent"}

func (a Action) String() string {
	if a < actions {
		return actionNames[a]
	}
	return "action " + strconv.Itoa(int(a))
}

// refusedWhat is how a refusal sentence starts, per action.
var refusedWhat = [actions]string{"attach", "terminal", "input", "reset", "command", "file transfer", "upload", "port forwarding", "keep", "size", "grant", "recorded input", "agent forwarding"}

// Access is what one credential may do on one instance: Identity.On's
// answer. Its zero value allows nothing.
type Access struct {
	// Instance is the instance it answers for.
	Instance string
	// Kind names the credential in refusals.
	Kind Kind
	// Use: the instance is the credential's to watch (an uncovered one
	// answers as unknown, so names do not leak).
	Use bool
	// Write: input, resets, commands and everything that changes the
	// instance; false makes an observer.
	Write bool
	// PTY: interactive terminals.
	PTY bool
	// Forward and PermitOpen: forwarding, and where to (nil: anywhere).
	Forward    bool
	PermitOpen []string
	// PermitListen: where ssh -R may listen (nil: any port, loopback).
	PermitListen []string
	// ReadFiles and WriteFiles: file transfers each way.
	ReadFiles, WriteFiles bool
	// Agent: the client's forwarded agent may be used.
	Agent bool

	sw     Switches
	logins loginSet
	// noForwardWhy says why a writer may not forward (the options that
	// refuse it), for the refusal.
	noForwardWhy string
}

// On is the one decision: what the identity may do on instance under the
// gateway's switches. Each covering grant gives what it allows on its own
// (a read-only grant forwards nothing, whatever its other options), and
// the identity gets the union of those: read-only only where every
// covering grant is read-only. A name outside the contract's syntax is
// covered by nothing.
func (id Identity) On(instance string, sw Switches) Access {
	a := Access{Instance: instance, Kind: id.Kind, sw: sw}
	if !names.Valid(instance) {
		return a
	}
	anyTarget, anyListen := false, false
	for _, g := range id.Grants {
		if !covers(g.Instances, instance) {
			continue
		}
		a.Use = true
		a.PTY = a.PTY || !g.NoPTY
		a.logins.add(g)
		if g.ReadOnly {
			continue
		}
		a.Write, a.ReadFiles = true, true
		a.WriteFiles = a.WriteFiles || g.Files != FilesDownload
		a.Agent = a.Agent || !g.NoAgentForwarding
		if g.NoPortForwarding {
			continue
		}
		a.Forward = true
		if len(g.PermitOpen) == 0 {
			anyTarget = true
		}
		a.PermitOpen = append(a.PermitOpen, g.PermitOpen...)
		if len(g.PermitListen) == 0 {
			anyListen = true
		}
		a.PermitListen = append(a.PermitListen, g.PermitListen...)
	}
	if anyTarget {
		a.PermitOpen = nil
	}
	if anyListen {
		a.PermitListen = nil
	}
	if a.Write && !a.Forward {
		a.noForwardWhy = id.Kind.noForwardWhy()
	}
	return a
}

// noForwardWhy names the options that refuse forwarding, per kind.
func (k Kind) noForwardWhy() string {
	switch k {
	case KindCertificate:
		return "a certificate without permit-port-forwarding"
	case KindSignIn:
		return "the policies that cover the instance say port-forwarding: false"
	}
	return "no-port-forwarding or restrict"
}

// noAgentWhy names the options that refuse agent forwarding, per kind.
func (k Kind) noAgentWhy() string {
	switch k {
	case KindCertificate:
		return "a certificate without permit-agent-forwarding"
	case KindSignIn:
		return "the policies that cover the instance say agent-forwarding: false"
	}
	return "no-agent-forwarding or restrict"
}

// May reports whether the identity may use the instance at all (watch
// it): On's Use, for filters such as listings.
func (id Identity) May(instance string) bool { return id.On(instance, Switches{}).Use }

// Refusal is a decision's no: Message is the sentence the user reads (no
// "termgate: " prefix; listeners add their own framing), Reason the audit
// trail's short reason. Hidden refusals are for an instance the credential
// may not use: the listener answers as for an unknown instance.
type Refusal struct {
	Action  Action
	Hidden  bool
	Message string
	Reason  string
}

func (r *Refusal) Error() string { return r.Message }

// Decide allows act (nil) or says why not.
func (a Access) Decide(act Action) *Refusal {
	noun := a.Kind.Noun()
	refuse := func(reason, msg string) *Refusal {
		return &Refusal{Action: act, Message: refusedWhat[act%actions] + " refused: " + msg, Reason: reason}
	}
	if !a.Use {
		return &Refusal{Action: act, Hidden: true, Message: "instance " + strconv.Quote(a.Instance) + " not found",
			Reason: "instance not allowed for this " + noun}
	}
	readOnly := func() *Refusal {
		return refuse("read-only "+noun, fmt.Sprintf("this %s is read-only on %s (an observer may attach and watch, and run list)", noun, a.Instance))
	}
	switch act {
	case Watch:
		return nil
	case Terminal:
		if !a.PTY {
			return refuse("no-pty "+noun, fmt.Sprintf("this %s may not open terminals (no-pty); it may run commands without -t, and reset, list, help", noun))
		}
		return nil
	case ReadFiles, WriteFiles:
		if a.sw.NoFileTransfer {
			return refuse("file transfer off", "file transfer is turned off on this gateway (--file-transfer=false)")
		}
		if !a.Write {
			return readOnly()
		}
		if act == WriteFiles && !a.WriteFiles {
			return refuse("download-only "+noun, fmt.Sprintf("this %s may download files but not upload them (files=download)", noun))
		}
		return nil
	case Forward:
		if a.sw.NoPortForwarding {
			return refuse("port forwarding off", "port forwarding is turned off on this gateway (--port-forwarding=false)")
		}
		if !a.Write {
			return readOnly()
		}
		if !a.Forward {
			return refuse("no-port-forwarding "+noun, fmt.Sprintf("port forwarding is not allowed for this %s on %s (%s)", noun, a.Instance, a.noForwardWhy))
		}
		return nil
	case Agent:
		if a.sw.NoAgentForwarding {
			return refuse("agent forwarding off", "agent forwarding is turned off on this gateway (--agent-forwarding=false)")
		}
		if !a.Write {
			return readOnly()
		}
		if !a.Agent {
			return refuse("no-agent-forwarding "+noun, fmt.Sprintf("agent forwarding is not allowed for this %s on %s (%s)", noun, a.Instance, a.Kind.noAgentWhy()))
		}
		return nil
	}
	if !a.Write {
		return readOnly()
	}
	return nil
}

// DecideOpen is Decide(Forward) for a connection to host:port: as in
// OpenSSH's permitopen, host is compared literally (no pattern, no name
// lookup: "localhost" is not "127.0.0.1"), an IPv6 address without its
// brackets; "*" matches any host or port.
func (a Access) DecideOpen(host string, port int) *Refusal {
	if r := a.Decide(Forward); r != nil {
		return r
	}
	if a.PermitOpen == nil {
		return nil
	}
	want := strconv.Itoa(port)
	ok := slices.ContainsFunc(a.PermitOpen, func(p string) bool {
		h, pt, err := net.SplitHostPort(p)
		return err == nil && (h == "*" || h == host) && (pt == "*" || pt == want)
	})
	if ok {
		return nil
	}
	target := net.JoinHostPort(displayName(host, 255), want)
	return &Refusal{Action: Forward, Reason: "permitopen",
		Message: fmt.Sprintf("port forwarding refused: this %s may not connect to %s (its permitopen= options do not list it)", a.Kind.Noun(), target)}
}

// DecideListen is Decide(Forward) for ssh -R on host:port in the
// instance, and says where to listen. As OpenSSH's sshd with its default
// GatewayPorts no, a listener is on the loopback whatever host asked for
// ("", "localhost" and "127.0.0.1": 127.0.0.1; "::1" stays), unless a
// permitlisten= entry names that host (or "*"): then on host itself. With
// permitlisten= options, the port must be one of theirs ("*" any; port
// 0, the instance's choice, only "*").
func (a Access) DecideListen(host string, port int) (bind string, r *Refusal) {
	if r := a.Decide(Forward); r != nil {
		return "", r
	}
	loop := "127.0.0.1"
	if host == "::1" {
		loop = host
	}
	if a.PermitListen == nil {
		return loop, nil
	}
	want := strconv.Itoa(port)
	bind = ""
	for _, p := range a.PermitListen {
		h, pt, err := net.SplitHostPort(p)
		if err != nil || (pt != "*" && (pt != want || port == 0)) {
			continue
		}
		switch {
		case h != "" && (h == host || h == "*") && host != "":
			if host == "*" {
				return "0.0.0.0", nil
			}
			return host, nil
		case h == "" || h == "localhost" || h == "127.0.0.1" || h == "::1":
			bind = loop
		}
	}
	if bind != "" {
		return bind, nil
	}
	where := net.JoinHostPort(displayName(host, 255), want)
	return "", &Refusal{Action: Forward, Reason: "permitlisten",
		Message: fmt.Sprintf("remote port forwarding refused: this %s may not listen on %s (its permitlisten= options do not list it)", a.Kind.Noun(), where)}
}

// DecideOpenPath is Decide(Forward) for a connection to a unix socket in
// the instance (ssh -L LPORT:/PATH): a credential whose permitopen=
// options limit its targets may connect to none.
func (a Access) DecideOpenPath() *Refusal {
	if r := a.Decide(Forward); r != nil {
		return r
	}
	if a.PermitOpen != nil {
		return &Refusal{Action: Forward, Reason: "permitopen",
			Message: fmt.Sprintf("port forwarding refused: this %s may connect only to the TCP targets of its permitopen= options, not to unix sockets", a.Kind.Noun())}
	}
	return nil
}

// DecideListenPath is Decide(Forward) for a unix socket listener in the
// instance (ssh -R /PATH:…): a credential whose permitlisten= options
// limit where it listens may listen on none.
func (a Access) DecideListenPath() *Refusal {
	if r := a.Decide(Forward); r != nil {
		return r
	}
	if a.PermitListen != nil {
		return &Refusal{Action: Forward, Reason: "permitlisten",
			Message: fmt.Sprintf("remote port forwarding refused: this %s may listen only on the TCP ports of its permitlisten= options, not on unix sockets", a.Kind.Noun())}
	}
	return nil
}
