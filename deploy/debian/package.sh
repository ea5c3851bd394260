#!/usr/bin/env bash
# Builds dist/termgate_VERSION_ARCH.deb from bin/termgate (made by `make
# build`, which `make package` runs first) with nfpm (deploy/debian/
# nfpm.yaml). The man page and the shell completions are generated here by
# that binary, so they describe the flags of the binary packaged (and its
# version), not whatever docs/termgate.1 was last committed as.
#
# VERSION is the Makefile's (git describe), made a Debian version: a tag
# v1.2.3 gives 1.2.3, v1.2.3-4-gabcdef0 gives 1.2.3+4+gabcdef0 (after
# 1.2.3), an untagged commit abcdef0 (or 41eaee1) gives 0~gitabcdef0
# (before any release); -dirty stays, as +dirty.
set -euo pipefail
cd "$(dirname "$0")/../.."

# nfpm, pinned; `go run` caches the built tool, so only the first run
# compiles it (about a minute), later ones take a second or two.
NFPM=${NFPM:-github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0}
GO=${GO:-go}
bin=bin/termgate
stage=dist/debian-stage

if [ ! -x "$bin" ]; then
	echo "package: $bin is missing: run make build first (make package does)" >&2
	exit 1
fi
version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
# A release tag has a dot (v1.2, 1.2.3); a bare commit may start with a
# digit too (41eaee1) and must still sort before every release.
if [[ $version =~ ^v?[0-9]+(\.[0-9]+)+ ]]; then
	deb_version=${version#v}
else
	deb_version=0~git$version
fi
deb_version=${deb_version//-/+}
arch=$("$GO" env GOARCH)
out=dist/termgate_${deb_version}_${arch}.deb

rm -rf "$stage"
mkdir -p "$stage"
"$bin" --help-man | gzip -9n >"$stage/termgate.1.gz"
"$bin" completion bash >"$stage/termgate.bash"
"$bin" completion zsh >"$stage/_termgate"
"$bin" completion fish >"$stage/termgate.fish"
# A native package's changelog (Debian policy 12.7): one entry, this build.
maintainer=$(sed -n 's/^maintainer: //p' deploy/debian/nfpm.yaml)
{
	printf 'termgate (%s) unstable; urgency=medium\n\n' "$deb_version"
	printf '  * Built from git describe %s.\n\n' "$version"
	printf ' -- %s  %s\n' "$maintainer" "$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$stage/changelog.gz"

rm -f "$out"
TERMGATE_DEB_VERSION=$deb_version TERMGATE_DEB_ARCH=$arch \
	"$GO" run "$NFPM" package --config deploy/debian/nfpm.yaml --packager deb --target "$out" >/dev/null
rm -rf "$stage"
echo "package: $out ($(du -k "$out" | cut -f1) KiB; binary $("$bin" --version))"
