// Package procmark is the backend-neutral half of ending a session's
// processes inside an instance: neither the Docker Engine API nor the
// Kubernetes API can kill an exec, so every shell carries a marker in its
// environment and a second exec runs KillScript, which finds the marked
// processes and their sessions through /proc. The backends own how the
// script reaches the instance (an exec) and what they do with its output.
package procmark

import (
	"strconv"
	"strings"
)

// EnvSession is the environment variable that marks every process of a
// session.
const EnvSession = "TERMGATE_SESSION"

// AllSessions is KillScript's MODE for every marker (a sweep without a
// gateway id).
const AllSessions = "--all"

// PrefixMode is KillScript's MODE for every marker starting with prefix.
func PrefixMode(prefix string) string { return "--prefix=" + prefix }

// KillScript ends marked processes. It runs as `sh -c KillScript
// termgate-kill MODE...` in a second, non-TTY exec, where MODE is one or more
// session markers (the processes whose environment holds
// TERMGATE_SESSION=MARKER for any of them), --prefix=P (any marker starting
// with P: one gateway's shells) or --all (any TERMGATE_SESSION). MODE is only
// ever compared, never expanded as code.
//
// Each marked process is SIGKILLed, and so is every process in its session
// (field 6 of /proc/PID/stat): a TTY exec is a session leader, and job
// control puts background jobs in their own process groups of that session,
// while `setsid` jobs keep the marker. Processes marked TERMGATE_HELD=1
// belong to a holder's session (durable sessions, backend/docker), which
// outlives gateways on purpose: they are never matched. It never touches PID 1, PID 1's
// session, itself or its own session, and skips zombies. Rounds repeat while
// they find something, to catch processes forked meanwhile.
//
// The stat fields are read after the LAST ')' of the whole file: the command
// name (comm) between the parentheses is the process's to choose and may
// hold ')', spaces and newlines, so the first line or the first ')' would let
// a process pose as a zombie (escaping its reset) or as a member of another
// session (getting that session killed).
//
// Only sh builtins, /proc and tr are needed (busybox, dash and bash all run
// it). It prints "killed PID MARK COMM" per signal sent (MARK is "-" for an
// unmarked session member; COMM is cut at its first newline).
const KillScript = `
IFS=' 	
'
wants=" $* "
self=$$
nl='
'
stat_of() {
	_l=
	_x=
	{ while IFS= read -r _x; do _l="$_l$_x$nl"; _x=; done; } 2>/dev/null <"/proc/$1/stat"
	_l="$_l$_x"
	case $_l in
	*\)*) ;;
	*) return 1 ;;
	esac
	st_comm=${_l#*\(}
	st_comm=${st_comm%\)*}
	st_comm=${st_comm%%"$nl"*}
	set -- ${_l##*\)}
	st_state=$1
	st_sid=$4
	[ -n "$st_sid" ]
}
mark_of() {
	_e="$nl$(tr '\0' '\n' 2>/dev/null <"/proc/$1/environ")$nl" || return 1
	case $_e in
	*"${nl}TERMGATE_SESSION="*) ;;
	*) return 1 ;;
	esac
	case $_e in
	*"${nl}TERMGATE_HELD=1${nl}"*) return 1 ;;
	esac
	mk=${_e#*"${nl}TERMGATE_SESSION="}
	mk=${mk%%"$nl"*}
	case $mk in
	''|*[!A-Za-z0-9_.-]*) return 1 ;;
	esac
}
matches() {
	case $wants in
	" --all ") return 0 ;;
	" --prefix="*)
		_p=${wants# --prefix=}
		case $mk in
		"${_p% }"*) return 0 ;;
		esac
		return 1 ;;
	*" $mk "*) return 0 ;;
	esac
	return 1
}
stat_of "$self" || exit 1
self_sid=$st_sid
init_sid=none
stat_of 1 && init_sid=$st_sid
round=0
found=1
while [ "$found" = 1 ] && [ "$round" -lt 8 ]; do
	round=$((round + 1))
	found=0
	sids=' '
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		case $p in 1|"$self") continue ;; esac
		stat_of "$p" || continue
		[ "$st_state" = Z ] && continue
		[ "$st_sid" = "$self_sid" ] && [ "$self_sid" != 0 ] && continue
		mark_of "$p" || continue
		matches || continue
		case $st_sid in
		0|"$self_sid"|"$init_sid") ;;
		*) sids="$sids$st_sid " ;;
		esac
		kill -9 "$p" 2>/dev/null && found=1 && echo "killed $p $mk $st_comm"
	done
	[ "$sids" = ' ' ] && continue
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		case $p in 1|"$self") continue ;; esac
		stat_of "$p" || continue
		[ "$st_state" = Z ] && continue
		case $sids in
		*" $st_sid "*) ;;
		*) continue ;;
		esac
		kill -9 "$p" 2>/dev/null && found=1 && echo "killed $p - $st_comm"
	done
done
exit 0
`

// Ended is one process KillScript signalled.
type Ended struct {
	PID     int
	Session string // "" for an unmarked member of a marked session
	Comm    string
}

// ParseEnded reads KillScript's output: one Ended per PID, in order.
func ParseEnded(out string) []Ended {
	var procs []Ended
	seen := map[int]bool{}
	for line := range strings.Lines(out) {
		f := strings.SplitN(strings.TrimRight(line, "\n"), " ", 4)
		if len(f) < 3 || f[0] != "killed" {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || seen[pid] {
			continue
		}
		seen[pid] = true
		e := Ended{PID: pid}
		if f[2] != "-" {
			e.Session = f[2]
		}
		if len(f) == 4 {
			e.Comm = f[3]
		}
		procs = append(procs, e)
	}
	return procs
}
