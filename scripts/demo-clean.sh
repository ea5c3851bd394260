#!/usr/bin/env bash
# Undoes `make demo`: stops the demo's gateway if it runs, removes the
# containers labelled termgate.demo=1, the demo's host key from
# ~/.ssh/known_hosts, the demo's state ./.termgate (host key, tokens,
# recordings) and the SSH key the demo generated, if it generated one
# (.termgate/demo-generated-key names it); a key you had is never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/demo-gateway.sh
LABEL=termgate.demo=1
if pid=$(demo_gateway); then
	# Stopped before its state goes; SIGTERM ends its sessions, within
	# --shutdown-timeout (9 s by default).
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 150); do
		demo_gateway_runs "$pid" || break
		sleep 0.1
	done
	if demo_gateway_runs "$pid"; then
		kill -KILL "$pid" 2>/dev/null || true
		echo "demo-clean: the demo gateway (pid $pid) did not stop within 15 s of SIGTERM: killed it"
	else
		echo "demo-clean: stopped the demo gateway (pid $pid)"
	fi
fi
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
# ssh remembers the demo's host key; the next demo makes a new one, which
# ssh would refuse ("REMOTE HOST IDENTIFICATION HAS CHANGED"). Only a line
# with this demo's key goes: another gateway on that port stays known.
known=$HOME/.ssh/known_hosts
if [ -f .termgate/ssh_host_ed25519_key ] && [ -f "$known" ]; then
	blob=$(ssh-keygen -y -f .termgate/ssh_host_ed25519_key 2>/dev/null | cut -d' ' -f2) || blob=
	for host in '[localhost]:2222' '[127.0.0.1]:2222' '[::1]:2222'; do
		if [ -n "$blob" ] && ssh-keygen -F "$host" -f "$known" 2>/dev/null | grep -qF " $blob"; then
			ssh-keygen -R "$host" -f "$known" >/dev/null 2>&1
			echo "demo-clean: removed $host (the demo's host key) from $known (the file before: $known.old)"
		fi
	done
fi
if [ -d .termgate ]; then
	rm -rf .termgate
	echo "demo-clean: removed ./.termgate"
fi
