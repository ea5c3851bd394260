#!/usr/bin/env bash
# Installs Debian's openssh-server when sshd is missing: `make bench`
# measures an OpenSSH sshd with ForceCommand docker exec -it as an anchor.
# The benchmark starts its own sshd on a loopback port; this never starts
# or enables the system's ssh service.
set -euo pipefail
if [ -x /usr/sbin/sshd ] || command -v sshd >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "ensure-sshd.sh: sshd not found; install Debian's openssh-server (or run tgbench with -openssh=false)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq openssh-server >/dev/null
