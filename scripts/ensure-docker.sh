#!/usr/bin/env bash
# Makes sure a Docker engine answers: installs Debian's docker.io and
# busybox-static when missing (as root) and starts dockerd when none runs.
# Used by .ci/run and scripts/demo.sh.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

if ! command -v dockerd >/dev/null || ! [ -x /bin/busybox ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "ensure-docker: install docker.io and busybox-static (or run this as root)" >&2
		exit 1
	fi
	apt-get update -qq
	apt-get install -y -qq docker.io busybox-static >/dev/null
fi

if docker info >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "ensure-docker: no Docker engine answers; start it (sudo systemctl start docker) or run as root" >&2
	exit 1
fi
# The flags suit a sandbox without bridge networking or overlayfs; on a
# normal host, prefer the distribution's service (systemctl start docker).
log=${DOCKERD_LOG:-/tmp/termgate-dockerd.log}
dockerd --iptables=false --bridge=none --storage-driver=vfs >"$log" 2>&1 &
for _ in $(seq 1 60); do
	docker info >/dev/null 2>&1 && exit 0
	sleep 1
done
echo "ensure-docker: dockerd did not start; last lines of $log:" >&2
tail -n 30 "$log" >&2
exit 1
