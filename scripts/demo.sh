#!/usr/bin/env bash
# One command from a fresh machine to a working gateway: starts a Docker
# engine if needed, builds the test image and the binary, starts an example
# instance `web1` and runs termgate in the foreground with its state in
# ./.termgate (your ~/.ssh/*.pub keys are authorized on first start).
# Only containers labelled $LABEL are instances: the demo gateway neither
# shows nor enters (nor sweeps at start) any other container on the engine.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

bash scripts/ensure-docker.sh
bash scripts/test-image.sh
make build
LABEL=termgate.demo=1
# web1 from an earlier demo without the label is started again with it.
if [ "$(docker inspect -f '{{.State.Running}} {{index .Config.Labels "termgate.demo"}}' web1 2>/dev/null)" != "true 1" ]; then
	docker rm -f web1 >/dev/null 2>&1 || true
	docker run -d --init --network none --label "$LABEL" --name web1 termgate-test:busybox >/dev/null
	echo "started example instance web1 (label $LABEL)"
fi
if ! ls "$HOME"/.ssh/*.pub >/dev/null 2>&1 && [ ! -f .termgate/authorized_keys ]; then
	mkdir -p "$HOME/.ssh"
	ssh-keygen -q -t ed25519 -N '' -f "$HOME/.ssh/id_ed25519"
	echo "generated $HOME/.ssh/id_ed25519 for you"
fi
exec bin/termgate --state-dir .termgate --instance-label "$LABEL" "$@"
