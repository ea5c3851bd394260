#!/usr/bin/env bash
# Undoes `make demo`: removes the containers labelled termgate.demo=1, the
# demo's state ./.termgate (host key, tokens, recordings) and the SSH key
# the demo generated, if it generated one (.termgate/demo-generated-key
# names it); a key you had is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
LABEL=termgate.demo=1
ids=$(docker ps -aq --filter "label=$LABEL" 2>/dev/null || true)
if [ -n "$ids" ]; then
	# shellcheck disable=SC2086
	docker rm -f $ids >/dev/null
	echo "demo-clean: removed the containers labelled $LABEL"
fi
if [ -f .termgate/demo-generated-key ]; then
	key=$(cat .termgate/demo-generated-key)
	case "$key" in
	"$HOME"/.ssh/id_ed25519)
		rm -f "$key" "$key.pub"
		echo "demo-clean: removed $key, which the demo had generated"
		;;
	esac
fi
if [ -d .termgate ]; then
	rm -rf .termgate
	echo "demo-clean: removed ./.termgate"
fi
