#!/usr/bin/env bash
# The single sign-on rows (issue 24) for `make bench`: bench/cmd/tgsignin
# against a real Dex (scripts/dex: TERMGATE_TEST_OIDC_ISSUER when one runs,
# else one started on port 5557 for the run and stopped after).
#
# Usage: bench/signin.sh BIN [N]
set -euo pipefail
BIN=${1:?usage: bench/signin.sh BIN [N]}
N=${2:-20}
cd "$(dirname "$0")/.."
ISSUER=${TERMGATE_TEST_OIDC_ISSUER:-}
if [ -z "$ISSUER" ]; then
	ISSUER=$(bash scripts/dex/up.sh 5557)
	trap 'bash scripts/dex/down.sh 5557 >/dev/null 2>&1 || true' EXIT
fi
echo "== single sign-on (median of $N; gateway / anchor)"
go run ./bench/cmd/tgsignin -termgate "$BIN" -issuer "$ISSUER" -n "$N"
