// Package procmark is the backend-neutral half of ending a session's
// processes inside an instance: neither the Docker Engine API nor the
// Kubernetes API can kill an exec, so every shell carries a marker in its
// environment and a second exec runs KillScript, which finds the marked
// processes and their sessions through /proc. The backends own how the
// script reaches the instance (an exec) and what they do with its output.
// It uses the standard library alone: the holder links it (its kill
// subcommand), so it must not bring the registry in (a shell's start spec
// is exechost's; the session id syntax is internal/names').
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

// Orphans is KillScript's MODE for every process marked TERMGATE_HELD=1
// that no live holder is above: the jobs of a holder that died (its
// session is over, whoever started it).
const Orphans = "--orphans"

// PrefixMode is KillScript's MODE for every marker starting with prefix.
func PrefixMode(prefix string) string { return "--prefix=" + prefix }

// HolderDirArg names a directory whose .termgate may hold holder binaries
// (exechost.HolderDirs): KillScript spares what runs below such a holder.
func HolderDirArg(dir string) string { return "--holder-dir=" + dir }

// KillScript ends marked processes. It runs as `sh -c KillScript
// termgate-kill ARG...` in a second, non-TTY exec. Each ARG is a session
// marker (the processes whose environment holds TERMGATE_SESSION=MARKER),
// --prefix=P (any marker starting with P: one gateway's shells), --all (any
// TERMGATE_SESSION), --orphans (any TERMGATE_HELD=1 process that no live
// holder is above) or --holder-dir=DIR (see below). ARGs are only ever
// compared, never expanded as code.
//
// A marker is a process's to keep or drop (env -i), and to forge
// (TERMGATE_HELD=1), so it only starts the search. Each marked process is
// SIGKILLed, and so is every process in its session (field 6 of
// /proc/PID/stat: a TTY exec is a session leader, and job control puts
// background jobs in their own process groups of that session) and every
// descendant (the PPid chain, field 4): a job that calls setsid and clears
// its environment is still below the shell. So is every process that holds
// the controlling terminal of a marked process open as its fd 0, 1 or 2
// (field 7, a /dev/pts entry, compared with test -ef): setsid forks when
// its caller leads a process group, as every job of an interactive shell
// does, and its child, PID 1's from then on, still writes to the session's
// terminal. (A controlling terminal, not any open file: a job cannot make
// another session's terminal its own, as it could open one.) What
// escapes is a process that leaves the tree (a double fork makes it PID
// 1's child), drops the marker and lets go of the terminal: nothing in
// /proc ties it to the session any more (SECURITY.md).
//
// A process below a live holder (durable sessions) is the holder's, which
// outlives gateways on purpose and ends its own (holder.shell.kill): it is
// never touched, whatever its marker. A holder is an ancestor whose
// /proc/PID/exe is the same file (test -ef) as a DIR/.termgate/holder-*
// that is a file of the script's user, not a link, in a .termgate directory
// of that user's that is no link and not writable by group or others (ls
// -ldn, where ls exists), or, where readlink exists, a deleted
// DIR/.termgate/holder-* in such a directory (a holder whose directory a
// tmp cleaner removed makes it again), unless its first argument is "as"
// (the login tool's parent of a shell). TERMGATE_HELD=1 is honoured nowhere else: a
// process that sets it in an ordinary session, or a held job whose holder
// died, is matched like any other.
//
// It never touches PID 1, PID 1's session, itself or its own session, and
// skips zombies. Each round takes the whole table of processes first and
// then kills (a parent killed first would hand its children to PID 1
// before they are found); rounds repeat while they kill something, to
// catch processes forked meanwhile.
//
// The stat fields are read after the LAST ')' of the whole file: the command
// name (comm) between the parentheses is the process's to choose and may
// hold ')', spaces and newlines, so the first line or the first ')' would let
// a process pose as a zombie (escaping its reset), as another's child or as
// a member of another session (getting that session killed).
//
// Only sh builtins, /proc, tr and (optionally) ls are needed (busybox, dash
// and bash all run it). It prints "killed PID MARK COMM" per signal sent
// (MARK is "-" for an unmarked session member or descendant; COMM is cut at
// its first newline).
const KillScript = `
IFS=' 	
'
nl='
'
self=$$
wants=' '
prefixes=
all=0
orphans=0
bins=
homes=
trusted_home() {
	[ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ] || return 1
	command -v ls >/dev/null 2>&1 || return 0
	set -- $(ls -ldn -- "$1" 2>/dev/null)
	case $1 in
	d????w*|d???????w*|*+) return 1 ;;
	d*) return 0 ;;
	esac
	return 1
}
for a do
	case $a in
	--all) all=1 ;;
	--orphans) orphans=1 ;;
	--prefix=?*) prefixes="$prefixes${a#--prefix=}$nl" ;;
	--holder-dir=/*)
		h=${a#--holder-dir=}
		h=${h%/}/.termgate
		trusted_home "$h" || continue
		homes="$homes$h$nl"
		for f in "$h"/holder-*; do
			[ -f "$f" ] && [ ! -L "$f" ] && [ -O "$f" ] && bins="$bins$f$nl"
		done ;;
	*) wants="$wants$a " ;;
	esac
done
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
	st_ppid=$2
	st_sid=$4
	st_tty=$5
	[ -n "$st_sid" ]
}
mark_of() {
	_e="$nl$(tr '\0' '\n' 2>/dev/null <"/proc/$1/environ")$nl" || return 1
	case $_e in
	*"${nl}TERMGATE_SESSION="*) ;;
	*) return 1 ;;
	esac
	held=0
	case $_e in
	*"${nl}TERMGATE_HELD=1${nl}"*) held=1 ;;
	esac
	mk=${_e#*"${nl}TERMGATE_SESSION="}
	mk=${mk%%"$nl"*}
	case $mk in
	''|*[!A-Za-z0-9_.-]*) return 1 ;;
	esac
}
matches() {
	[ "$all" = 1 ] && return 0
	[ "$orphans" = 1 ] && [ "$held" = 1 ] && return 0
	case $wants in
	*" $mk "*) return 0 ;;
	esac
	_i=$IFS
	IFS=$nl
	for _p in $prefixes; do
		case $mk in
		"$_p"*) IFS=$_i; return 0 ;;
		esac
	done
	IFS=$_i
	return 1
}
is_holder() {
	[ -n "$homes" ] || return 1
	case $hl in *" $1 "*) return 0 ;; esac
	case $nothl in *" $1 "*) return 1 ;; esac
	# The login tool's "as" parent of a shell (cmd/termgate-holder
	# login.go) runs the holder binary but holds nothing.
	_x=$(tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline")
	_x=${_x#*"$nl"}
	if [ "${_x%%"$nl"*}" = as ]; then
		nothl="$nothl$1 "
		return 1
	fi
	_i=$IFS
	IFS=$nl
	for _b in $bins; do
		if [ "/proc/$1/exe" -ef "$_b" ]; then
			IFS=$_i
			hl="$hl$1 "
			return 0
		fi
	done
	# A live holder whose binary was deleted (a tmp cleaner took its
	# whole directory, which it then made again: holder/relisten.go) runs
	# "HOME/holder-HASH (deleted)", HOME one of the trusted homes.
	if command -v readlink >/dev/null 2>&1; then
		_x=$(readlink "/proc/$1/exe" 2>/dev/null)
		case $_x in
		*" (deleted)")
			_x=${_x% (deleted)}
			for _h in $homes; do
				case ${_x%/*}/${_x##*/} in
				"$_h"/holder-*) [ "${_x%/*}" = "$_h" ] && { IFS=$_i; hl="$hl$1 "; return 0; } ;;
				esac
			done ;;
		esac
	fi
	IFS=$_i
	nothl="$nothl$1 "
	return 1
}
below_holder() {
	[ -n "$homes" ] || return 1
	_a=$1
	_n=0
	while [ "$_n" -lt 4096 ]; do
		case $tab in
		*"$nl$_a "*) ;;
		*) return 1 ;;
		esac
		_r=${tab#*"$nl$_a "}
		_a=${_r%% *}
		case $_a in
		''|0|1) return 1 ;;
		esac
		is_holder "$_a" && return 0
		_n=$((_n + 1))
	done
	return 1
}
tty_path() {
	case $1 in ''|0|*[!0-9]*) return 1 ;; esac
	[ $(( ($1 >> 8) & 4095 )) = 136 ] || return 1
	tp=/dev/pts/$(( ($1 & 255) | (($1 >> 12) & 1048320) ))
	[ -c "$tp" ]
}
holds_tty() {
	for _n in 0 1 2; do
		[ -e "/proc/$1/fd/$_n" ] || continue
		_i=$IFS
		IFS=$nl
		for _t in $ttys; do
			if [ "/proc/$1/fd/$_n" -ef "$_t" ]; then
				IFS=$_i
				return 0
			fi
		done
		IFS=$_i
	done
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
	tab=$nl
	cand=
	hl=' '
	nothl=' '
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		case $p in 1|"$self") continue ;; esac
		stat_of "$p" || continue
		[ "$st_state" = Z ] && continue
		[ "$st_sid" = "$self_sid" ] && [ "$self_sid" != 0 ] && continue
		tab="$tab$p $st_ppid $st_sid $st_tty$nl"
		mark_of "$p" || continue
		matches || continue
		cand="$cand$p:$mk "
	done
	ks=' '
	sids=' '
	marks=' '
	for c in $cand; do
		p=${c%%:*}
		below_holder "$p" && continue
		ks="$ks$p "
		marks="$marks$c "
		_r=${tab#*"$nl$p "}
		_r=${_r%%"$nl"*}
		s=${_r#* }
		s=${s%% *}
		case $s in
		0|"$self_sid"|"$init_sid") ;;
		*) sids="$sids$s " ;;
		esac
	done
	[ "$ks" = ' ' ] && continue
	ttys=
	for p in $ks; do
		_r=${tab#*"$nl$p "}
		_r=${_r%%"$nl"*}
		set -- $_r
		tty_path "$3" || continue
		case $ttys in *"$nl$tp$nl"*) ;; *) ttys="$ttys$nl$tp$nl" ;; esac
	done
	if [ -n "$ttys" ]; then
		IFS=$nl
		for line in $tab; do
			IFS=' '
			set -- $line
			case $ks in *" $1 "*) continue ;; esac
			holds_tty "$1" || continue
			below_holder "$1" && continue
			ks="$ks$1 "
		done
		IFS=' 	
'
	fi
	grew=1
	while [ "$grew" = 1 ]; do
		grew=0
		IFS=$nl
		for line in $tab; do
			IFS=' '
			set -- $line
			case $ks in *" $1 "*) continue ;; esac
			hit=0
			case $ks in *" $2 "*) hit=1 ;; esac
			case $sids in *" $3 "*) hit=1 ;; esac
			[ "$hit" = 1 ] || continue
			below_holder "$1" && continue
			ks="$ks$1 "
			grew=1
		done
		IFS=' 	
'
	done
	for p in $ks; do
		mk=-
		case $marks in
		*" $p:"*)
			mk=${marks#*" $p:"}
			mk=${mk%% *} ;;
		esac
		st_comm=
		stat_of "$p"
		kill -9 "$p" 2>/dev/null && found=1 && echo "killed $p $mk $st_comm"
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

// Summary lists what a sweep ended for its log line: the sessions once
// each, and every process as PID/COMM.
func Summary(procs []Ended) (sessionIDs, pids []string) {
	seen := map[string]bool{}
	for _, p := range procs {
		pids = append(pids, strconv.Itoa(p.PID)+"/"+p.Comm)
		if p.Session != "" && !seen[p.Session] {
			seen[p.Session] = true
			sessionIDs = append(sessionIDs, p.Session)
		}
	}
	return sessionIDs, pids
}
