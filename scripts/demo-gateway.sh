# Sourced by demo.sh and demo-clean.sh: finds the demo's gateway by the pid
# file demo.sh keeps in ./.termgate while the gateway runs.

# demo_pidfile names the file; demo.sh writes it, demo-clean.sh reads it.
demo_pidfile=.termgate/demo.pid

# demo_gateway_runs PID: whether PID is a gateway running on ./.termgate.
# The command line is checked, not only the PID, so that a PID reused by
# another program after a crash (the pid file left behind) is not taken for
# the gateway; a zombie has an empty command line and counts as ended.
demo_gateway_runs() {
	local args
	args=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	case "$args" in
	*termgate*"--state-dir .termgate "*) return 0 ;;
	esac
	return 1
}

# demo_gateway prints the PID of the running demo gateway, if there is one.
demo_gateway() {
	local pid
	pid=$(cat "$demo_pidfile" 2>/dev/null) || return 1
	case "$pid" in
	'' | *[!0-9]*) return 1 ;;
	esac
	demo_gateway_runs "$pid" || return 1
	echo "$pid"
}
