#!/usr/bin/env bash
# Builds termgate-test:dash from termgate-test:busybox: the same busybox
# applets, but /bin/sh is the host's dash and /bin/tr the host's GNU tr, each
# with its glibc, as in Debian or Ubuntu images. The kill script must run in
# both. Idempotent; pulls nothing.
set -euo pipefail

image=termgate-test:dash
if docker image inspect "$image" >/dev/null 2>&1; then
	exit 0
fi
dash=$(command -v dash) || { echo "dash-image.sh: dash not found on the host" >&2; exit 1; }
tr=$(command -v tr)

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/root/bin"
cp "$dash" "$ctx/root/bin/dash"
cp "$tr" "$ctx/root/bin/gnu-tr"
for lib in $(ldd "$dash" "$tr" | grep -o '/[^ ]*\.so[^ ]*' | sort -u); do
	mkdir -p "$ctx/root$(dirname "$lib")"
	cp -L "$lib" "$ctx/root$lib"
done
cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM termgate-test:busybox
COPY root/ /
RUN rm /bin/sh /bin/tr && ln -s dash /bin/sh && mv /bin/gnu-tr /bin/tr && /bin/tr --version >/dev/null
DOCKERFILE
DOCKER_BUILDKIT=0 docker build -q --network none -t "$image" "$ctx" >/dev/null 2>&1 || DOCKER_BUILDKIT=0 docker build --network none -t "$image" "$ctx"
echo "built $image"
