#!/usr/bin/env bash
# Builds the local image termgate-test:busybox without pulling anything: a
# rootfs holding only a static busybox (Debian's busybox-static) and its
# applet symlinks, imported with `docker import`. Idempotent: it does nothing
# when the image already exists (set TERMGATE_REBUILD_IMAGE=1 to force).
set -euo pipefail

image=${TERMGATE_TEST_IMAGE:-termgate-test:busybox}
busybox=${BUSYBOX:-/bin/busybox}

if [[ "${TERMGATE_REBUILD_IMAGE:-}" != 1 ]] && docker image inspect "$image" >/dev/null 2>&1; then
	exit 0
fi

if [[ ! -x "$busybox" ]]; then
	echo "test-image.sh: $busybox not found; install Debian's busybox-static (apt-get install busybox-static)" >&2
	exit 1
fi
if ldd "$busybox" >/dev/null 2>&1; then
	echo "test-image.sh: $busybox is dynamically linked; a static busybox (busybox-static) is needed" >&2
	exit 1
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 755 "$root" # the image's /: mktemp's 0700 would shut every user but root out

mkdir -p "$root/bin" "$root/proc" "$root/root" "$root/etc" "$root/dev" "$root/sys"
install -d -m 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
	[[ "$applet" == busybox ]] && continue
	ln -s busybox "$root/bin/$applet"
done
# app is the second user logins are tested with (app@INSTANCE).
printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'app:x:1000:1000:app:/home/app:/bin/sh' >"$root/etc/passwd"
printf '%s\n' 'root:x:0:' 'app:x:1000:' >"$root/etc/group"
# (its home is made by the tests that use it: the archive's owners are
# the builder's, not uid 1000)

tar -C "$root" -c . | docker import \
	--change 'ENV PATH=/bin' \
	--change 'CMD ["/bin/sh","-c","sleep 1000000"]' \
	- "$image" >/dev/null
echo "built $image"
