#!/usr/bin/env bash
# One command from a fresh machine to a working gateway: starts a Docker
# engine if needed, builds the test image and the binary, starts an example
# instance `web1` and runs termgate in the foreground with its state in
# ./.termgate (your ~/.ssh/*.pub keys are authorized on first start).
# Only containers labelled $LABEL are instances: the demo gateway neither
# shows nor enters (nor sweeps at start) any other container on the engine.
# Sessions are recorded in .termgate/recordings, so the player has
# something to show. `make demo-clean` (scripts/demo-clean.sh) undoes it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

say() { printf 'demo: %s\n' "$*"; }

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
say "the gateway keeps its state in ./.termgate and records sessions in ./.termgate/recordings"
for c in "${created[@]}"; do say "created $c"; done
say "make demo-clean removes the demo's containers, ./.termgate and a key it generated"
exec bin/termgate --state-dir .termgate --instance-label "$LABEL" --record-dir .termgate/recordings "$@"
