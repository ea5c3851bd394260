#!/usr/bin/env bash
# One command from a fresh machine to a working gateway: starts a Docker
# engine if needed, builds the test image and the binary, starts an example
# instance `web1` and runs termgate in the foreground with its state in
# ./.termgate (your ~/.ssh/*.pub keys are authorized on first start).
# Only containers labelled $LABEL are instances: the demo gateway neither
# shows nor enters (nor sweeps at start) any other container on the engine.
# Sessions are recorded in .termgate/recordings, so the player has
# something to show. `make demo-clean` (scripts/demo-clean.sh) undoes it.
# It listens on 127.0.0.1 (ports 2222 and 8080) unless DEMO_ADDR names
# another address (DEMO_ADDR=0.0.0.0: every interface); ARGS such as
# --ssh-addr override both.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
. scripts/demo-gateway.sh

say() { printf 'demo: %s\n' "$*"; }

# A second demo on the same state would adopt the first one's sessions and
# then fail on its ports: say which gateway runs and how to stop it.
if pid=$(demo_gateway); then
	say "a demo gateway already runs on ./.termgate (pid $pid), perhaps in another terminal" >&2
	say "stop it with: kill $pid (the state and the sessions' containers stay), or make demo-clean (removes the demo)" >&2
	exit 1
fi
addr=${DEMO_ADDR:-127.0.0.1}

say "checking the Docker engine (starting one if none answers)"
bash scripts/ensure-docker.sh
say "building the test image termgate-test:busybox (local, nothing is pulled)"
bash scripts/test-image.sh
if [ -x bin/termgate ]; then
	say "building bin/termgate (seconds when nothing changed)"
else
	say "building bin/termgate (first time: a few minutes on a small machine, with no output while go builds)"
fi
make build
LABEL=termgate.demo=1
created=()
# web1 from an earlier demo without the label is started again with it.
if [ "$(docker inspect -f '{{.State.Running}} {{index .Config.Labels "termgate.demo"}}' web1 2>/dev/null)" != "true 1" ]; then
	docker rm -f web1 >/dev/null 2>&1 || true
	docker run -d --init --network none --label "$LABEL" --name web1 termgate-test:busybox >/dev/null
	created+=("the container web1 (label $LABEL)")
fi
mkdir -p .termgate
if ! ls "$HOME"/.ssh/*.pub >/dev/null 2>&1 && [ ! -f .termgate/authorized_keys ]; then
	mkdir -p "$HOME/.ssh"
	ssh-keygen -q -t ed25519 -N '' -f "$HOME/.ssh/id_ed25519"
	# demo-clean removes the key only when the demo made it.
	echo "$HOME/.ssh/id_ed25519" >.termgate/demo-generated-key
	created+=("the SSH key $HOME/.ssh/id_ed25519 (you had none)")
fi
# A new host key meets a line that an earlier demo (cleaned up by hand, or
# by a demo-clean older than the known_hosts clean-up) left in known_hosts.
if [ ! -f .termgate/ssh_host_ed25519_key ] && [ "$addr" = 127.0.0.1 ] &&
	ssh-keygen -F '[localhost]:2222' -f "$HOME/.ssh/known_hosts" >/dev/null 2>&1; then
	say "~/.ssh/known_hosts remembers a host key for [localhost]:2222, and this demo makes a new one:"
	say "if ssh says REMOTE HOST IDENTIFICATION HAS CHANGED, run ssh-keygen -R '[localhost]:2222'"
fi
say "the gateway keeps its state in ./.termgate and records sessions in ./.termgate/recordings"
for c in "${created[@]}"; do say "created $c"; done
say "make demo-clean removes the demo's containers, ./.termgate, a key it generated and the demo's line in ~/.ssh/known_hosts"
if [ "$addr" = 127.0.0.1 ]; then
	say "listening on 127.0.0.1 only (DEMO_ADDR=0.0.0.0 make demo: every interface)"
fi

# The gateway runs as a child, not exec'd: SIGHUP means "reload" to the
# gateway, so a closed terminal would leave it running with the ports. The
# terminal's SIGHUP reaches this script (the shell forwards it to the job,
# or the kernel sends it to the foreground group), which stops the gateway
# with SIGTERM; a SIGHUP sent to the gateway alone still reloads it.
# bash starts a background job with SIGINT ignored; the gateway catches it
# anyway, and Ctrl-C is forwarded in case it reached only this script.
gw=
stop_gateway() { kill "-$1" "$gw" 2>/dev/null || true; }
trap 'stop_gateway TERM' HUP TERM
trap 'stop_gateway INT' INT
trap 'rm -f "$demo_pidfile"' EXIT
bin/termgate --state-dir .termgate --ssh-addr "$addr:2222" --http-addr "$addr:8080" \
	--instance-label "$LABEL" --record-dir .termgate/recordings "$@" &
gw=$!
echo "$gw" >"$demo_pidfile"
rc=0
while :; do
	wait "$gw" && rc=0 || rc=$?
	# wait returns early (above 128) when a trapped signal arrives, while
	# the gateway shuts its sessions down: wait for it to end.
	if [ "$rc" -le 128 ] || ! kill -0 "$gw" 2>/dev/null; then
		break
	fi
done
exit "$rc"
