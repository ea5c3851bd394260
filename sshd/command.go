package sshd

import (
	"fmt"
	"strings"
)

// verb is what an SSH command line asks for.
type verb int

const (
	verbAttach verb = iota // no command: attach to the user name's instance
	verbReset
	verbList
	verbHelp
	verbInstances
	verbSize
	verbKeep
	verbWho
	verbHand
	verbGrant
	verbLog
	verbWhoami
	verbLogout
	verbKeys
	verbKeysForget
)

func (v verb) String() string {
	switch v {
	case verbAttach:
		return "attach"
	case verbReset:
		return "reset"
	case verbList:
		return "list"
	case verbHelp:
		return "help"
	case verbInstances:
		return "instances"
	case verbSize:
		return "size"
	case verbKeep:
		return "keep"
	case verbWho:
		return "who"
	case verbHand:
		return "hand"
	case verbGrant:
		return "grant"
	case verbLog:
		return "log"
	case verbWhoami:
		return "whoami"
	case verbLogout:
		return "logout"
	case verbKeys:
		return "keys"
	case verbKeysForget:
		return "keys forget"
	}
	return fmt.Sprintf("verb(%d)", int(v))
}

// command is a parsed SSH command line.
type command struct {
	verb verb
	// instance is reset's argument (empty means the SSH user name),
	// size's and log's.
	instance string
	// size is size's second argument (COLSxROWS, auto, or empty to show)
	// and keep's (a duration, or off).
	size string
}

// usageError is a command line parseCommand does not understand; the user
// gets its message and the usage, with exit status 2.
type usageError struct {
	msg     string
	unknown string // the first word, when it is no command at all
}

func (e *usageError) Error() string { return e.msg }

// parseCommand parses the raw SSH command line. It splits on white space
// and never unquotes: instance names contain no quotes or spaces, and a
// shell-style split (as gliderlabs' Session.Command did) returns nothing
// for an unbalanced quote, which would turn a command into an attach.
func parseCommand(raw string) (command, error) {
	f := strings.Fields(raw)
	if len(f) == 0 {
		return command{verb: verbAttach}, nil
	}
	switch f[0] {
	case "reset":
		switch len(f) {
		case 1:
			return command{verb: verbReset}, nil
		case 2:
			return command{verb: verbReset, instance: f[1]}, nil
		}
		return command{}, &usageError{msg: "reset takes at most one instance name"}
	case "list":
		if len(f) > 1 {
			return command{}, &usageError{msg: "list takes no arguments"}
		}
		return command{verb: verbList}, nil
	case "help", "-h", "--help":
		return command{verb: verbHelp}, nil
	case "instances":
		if len(f) > 1 {
			return command{}, &usageError{msg: "instances takes no arguments"}
		}
		return command{verb: verbInstances}, nil
	case "size":
		switch len(f) {
		case 2:
			return command{verb: verbSize, instance: f[1]}, nil
		case 3:
			return command{verb: verbSize, instance: f[1], size: f[2]}, nil
		}
		return command{}, &usageError{msg: "size takes an instance name and COLSxROWS or auto"}
	case "keep":
		if len(f) != 3 {
			return command{}, &usageError{msg: "keep takes an instance name and a duration (8h, 90m) or off"}
		}
		return command{verb: verbKeep, instance: f[1], size: f[2]}, nil
	case "who", "hand":
		if len(f) != 2 {
			return command{}, &usageError{msg: f[0] + " takes an instance name"}
		}
		v := verbWho
		if f[0] == "hand" {
			v = verbHand
		}
		return command{verb: v, instance: f[1]}, nil
	case "grant":
		if len(f) != 3 {
			return command{}, &usageError{msg: "grant takes an instance name and the name of an observer"}
		}
		return command{verb: verbGrant, instance: f[1], size: f[2]}, nil
	case "log":
		if len(f) != 2 {
			return command{}, &usageError{msg: "log takes an instance name"}
		}
		return command{verb: verbLog, instance: f[1]}, nil
	case "whoami", "logout":
		if len(f) > 1 {
			return command{}, &usageError{msg: f[0] + " takes no arguments"}
		}
		if f[0] == "whoami" {
			return command{verb: verbWhoami}, nil
		}
		return command{verb: verbLogout}, nil
	case "keys":
		switch {
		case len(f) == 1:
			return command{verb: verbKeys}, nil
		case len(f) == 3 && f[1] == "forget":
			return command{verb: verbKeysForget, instance: f[2]}, nil
		}
		return command{}, &usageError{msg: "keys takes nothing, or forget and a fingerprint (SHA256:…) that ssh HOST keys lists"}
	}
	return command{}, &usageError{msg: fmt.Sprintf("unknown command %q", clip(f[0], 64)), unknown: f[0]}
}

// String is the command line that parses back to c.
func (c command) String() string {
	switch c.verb {
	case verbAttach:
		return ""
	case verbReset:
		return strings.TrimSpace("reset " + c.instance)
	case verbSize, verbKeep, verbWho, verbHand, verbGrant, verbLog, verbKeysForget:
		return strings.TrimSpace(c.verb.String() + " " + c.instance + " " + c.size)
	}
	return c.verb.String()
}

// usage is the text of help, also shown after a usage error.
const usage = `termgate: persistent shells in instances, over SSH

usage:
  ssh -t INSTANCE@HOST        attach to INSTANCE's shell (created if none);
                              ~. or closing the client detaches, the shell
                              keeps running
  ssh -t INSTANCE+NAME@HOST   attach to INSTANCE's session NAME (created if
                              none): a shell of its own beside the default
                              one; reset, size, keep, who, hand, grant and log
                              take INSTANCE+NAME too
  ssh INSTANCE@HOST CMD...    run CMD in INSTANCE beside its shell (-t: on a
                              terminal of its own); closing the client ends
                              it and everything it started
  ssh HOST reset INSTANCE     kill INSTANCE's shell and everything it started,
                              start a fresh one
  ssh INSTANCE@HOST reset     the same
  ssh HOST instances          the instances this key may attach to
  ssh HOST size INSTANCE [COLSxROWS|auto]
                              show the shell's window size, pin it, or let
                              it follow the clients again (auto)
  ssh HOST keep INSTANCE 8h   keep INSTANCE's session that long with no client
                              attached (off: the idle timeout alone applies)
  ssh HOST who INSTANCE       who is attached, their access, when they typed
  ssh HOST hand INSTANCE      as an observer: ask the writers to let you type
  ssh HOST grant INSTANCE WHO let the observer WHO type until the next reset
  ssh HOST log INSTANCE       the output of INSTANCE's shell since you last
                              detached from it, as far as its buffer reaches
  ssh HOST list               the sessions this key may see
  ssh HOST whoami             who this key is, and what it may do
  ssh HOST logout             forget this key's sign-in with the identity provider
  ssh HOST keys               the SSH keys remembered for your identity
  ssh HOST keys forget FINGERPRINT
                              forget one of them (its connections are cut)
  ssh HOST help               this text
  ssh -N -L LPORT:127.0.0.1:PORT INSTANCE@HOST
                              forward local port LPORT to PORT inside INSTANCE
                              (also -D for SOCKS, -W for stdio); 127.0.0.1 is
                              the instance's own loopback

When the user name is a running instance this key may reach, every command
but a bare reset runs there; termgate@HOST always means the gateway
(ssh termgate@HOST list).

Add -p PORT when the gateway does not listen on port 22.
`
