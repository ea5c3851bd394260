#!/usr/bin/env bash
# Builds termgate-test:bash (or the image named by $1) from
# termgate-test:busybox: the same busybox applets, plus the host's bash with
# the glibc it links, as in a Debian or Ubuntu image (termgate's --shell
# auto picks bash). Idempotent; pulls nothing.
set -euo pipefail

image=${1:-termgate-test:bash}
if docker image inspect "$image" >/dev/null 2>&1; then
	exit 0
fi
bash_bin=$(command -v bash)

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/root/bin"
cp "$bash_bin" "$ctx/root/bin/bash"
for lib in $(ldd "$bash_bin" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
	mkdir -p "$ctx/root$(dirname "$lib")"
	cp -L "$lib" "$ctx/root$lib"
done
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM termgate-test:busybox
COPY root/ /
RUN /bin/bash -c 'echo "$BASH_VERSION"' >/dev/null
DOCKERFILE
DOCKER_BUILDKIT=0 docker build -q --network none -t "$image" "$ctx" >/dev/null 2>&1 || DOCKER_BUILDKIT=0 docker build --network none -t "$image" "$ctx"
echo "built $image"
