#!/usr/bin/env bash
# Builds the local image termgate-test:glibc without pulling anything: this
# host's dynamically linked /bin/bash with the glibc libraries `ldd` names,
# plus a static busybox for the usual tools and OpenSSH's scp (for legacy
# `scp -O`, which runs the instance's own scp), imported with `docker import`.
# The durable-session tests run the holder (a static binary) in it next to
# a glibc shell. Idempotent: nothing happens when the image exists (set
# TERMGATE_REBUILD_IMAGE=1 to force).
set -euo pipefail

image=${TERMGATE_TEST_GLIBC_IMAGE:-termgate-test:glibc}
busybox=${BUSYBOX:-/bin/busybox}
bash_bin=$(command -v bash)

# Bumped when the image changes, so that a cached older one is rebuilt.
version=3
if [[ "${TERMGATE_REBUILD_IMAGE:-}" != 1 ]] &&
	[[ "$(docker image inspect -f '{{index .Config.Labels "termgate.test-image"}}' "$image" 2>/dev/null)" == "$version" ]]; then
	exit 0
fi
if [[ ! -x "$busybox" ]] || ldd "$busybox" >/dev/null 2>&1; then
	echo "test-image-glibc.sh: a static $busybox is needed (apt-get install busybox-static)" >&2
	exit 1
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 755 "$root" # mktemp's 0700 would lock every other user out of /
mkdir -p "$root/bin" "$root/proc" "$root/root" "$root/etc" "$root/dev" "$root/sys" "$root/usr/bin"
install -d -m 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	[[ "$applet" == busybox || "$applet" == bash ]] && continue
	ln -s busybox "$root/bin/$applet"
done
cp "$bash_bin" "$root/bin/bash"
scp_bin=$(command -v scp)
cp "$scp_bin" "$root/bin/scp"
# Every library bash and scp link, at the path the loader looks for it.
for lib in $({ ldd "$bash_bin"; ldd "$scp_bin"; } | grep -o '/[^ ]*' | sort -u); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
echo 'root:x:0:0:root:/root:/bin/bash' >"$root/etc/passwd"
echo 'root:x:0:' >"$root/etc/group"

tar -C "$root" -c . | docker import \
	--change 'ENV PATH=/bin' \
	--change 'CMD ["/bin/sleep","1000000"]' \
	--change "LABEL termgate.test-image=$version" \
	- "$image" >/dev/null
echo "built $image"
