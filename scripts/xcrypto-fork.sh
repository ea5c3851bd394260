#!/usr/bin/env bash
# Regenerates third_party/golang.org/x/crypto from the module cache at the
# given version: the packages the build uses (no tests), plus the patch
# third_party/xcrypto-chacha20.patch (third_party/README.md says why).
#   scripts/xcrypto-fork.sh v0.59.0
set -euo pipefail
version=${1:?usage: scripts/xcrypto-fork.sh VERSION (e.g. v0.59.0)}
cd "$(dirname "$0")/.."
dst=third_party/golang.org/x/crypto
go mod download "golang.org/x/crypto@$version"
src=$(go env GOMODCACHE)/golang.org/x/crypto@$version
# What the build needs from x/crypto, with the fork's own additions.
pkgs=$( (go list -deps -test ./... | sed -n 's|^golang.org/x/crypto/||p'; echo chacha20poly1305) | sort -u)
rm -rf "$dst"
mkdir -p "$dst"
for p in $pkgs; do
	mkdir -p "$dst/$p"
	find "$src/$p" -maxdepth 1 -type f ! -name '*_test.go' -exec cp {} "$dst/$p/" \;
done
cp "$src/LICENSE" "$src/PATENTS" "$src/go.mod" "$dst/"
chmod -R u+w "$dst"
patch -d "$dst" -p1 < third_party/xcrypto-chacha20.patch
# The require names the copied version; the replace (without a version)
# makes a newer x/crypto asked by another module fail to build, never
# silently drop the patch.
go mod edit -require "golang.org/x/crypto@$version" -replace "golang.org/x/crypto=./$dst"
echo "third_party x/crypto is $version with the chacha20 patch; now: go mod tidy && make test"
