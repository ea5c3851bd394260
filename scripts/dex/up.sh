#!/usr/bin/env bash
# Start a throw-away Dex OIDC provider on 127.0.0.1 for the single sign-on tests
# (from ../shared/research/oidc-spike; .ci/run starts it, cached like the cluster).
#   usage: up.sh [PORT]            (default 5556)
#   prints the issuer URL (http://127.0.0.1:PORT/dex) on stdout; everything else goes to stderr.
# env:
#   TERMGATE_OIDC_CACHE          build + run dir (default /var/cache/termgate-oidc)
#   TERMGATE_OIDC_REDIRECT_URIS  comma-separated redirect URIs for client "termgate"
#                                (default http://127.0.0.1:5555/callback)
#   TERMGATE_OIDC_ISSUER_PATH    issuer path (default /dex; "" for an issuer at the root, which the
#                                device grant with the confidential client needs)
set -euo pipefail

PORT=${1:-${TERMGATE_OIDC_PORT:-5556}}
CACHE=${TERMGATE_OIDC_CACHE:-/var/cache/termgate-oidc}
# termgate's own callback on port 5555 is what the confidential-client test
# (web TestBrowserSignInConfidential) uses.
REDIRECTS=${TERMGATE_OIDC_REDIRECT_URIS:-http://127.0.0.1:5555/callback,http://127.0.0.1:5555/oidc/callback}
ISSUER_PATH=${TERMGATE_OIDC_ISSUER_PATH-/dex}
HERE=$(cd "$(dirname "$0")" && pwd)

# Dex tags releases as v2.x.y but its module path has no /v2, so the module proxy cannot serve
# "v2.45.1"; it does serve the release commit as a pseudo-version.
DEX_VERSION=v2.45.1
DEX_MODVER=v0.0.0-20260303133905-11d2eeb52b42   # = tag v2.45.1, commit 11d2eeb52b42
BIN=$CACHE/bin/dex-$DEX_VERSION

log() { echo "up.sh: $*" >&2; }

build() {
  mkdir -p "$CACHE/bin" "$CACHE/build"
  # The lock (fd 9) lives only in this subshell, so the Dex started below does not inherit it.
  (
    flock 9
    [ -x "$BIN" ] && exit 0
    log "building Dex $DEX_VERSION into $BIN (one-off, ~1.5 min on 2 cores)"
    b=$CACHE/build
    # `go install github.com/dexidp/dex/cmd/dex@...` is refused because Dex's go.mod has a
    # replace directive, so build cmd/dex from a tiny main module that requires it.
    printf 'module termgate.local/dexbuild\n\ngo 1.25.0\n' >"$b/go.mod"
    rm -f "$b/go.sum"
    # CGO off: only the sqlite3 storage needs cgo, and the memory storage is what we use.
    if ! (cd "$b" && GOFLAGS="-mod=mod -buildvcs=false" go get "github.com/dexidp/dex/cmd/dex@$DEX_MODVER" &&
          GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 go build -trimpath \
            -ldflags "-s -w -X main.version=$DEX_VERSION" -o "$BIN.tmp" github.com/dexidp/dex/cmd/dex
         ) >"$b/build.log" 2>&1; then
      log "build failed:"; tail -30 "$b/build.log" >&2; exit 1
    fi
    mv "$BIN.tmp" "$BIN"
    log "built $("$BIN" version | head -1)"
  ) 9>"$CACHE/build.lock"
}

[ -x "$BIN" ] || build

RUN=$CACHE/run/$PORT
mkdir -p "$RUN"
if [ -f "$RUN/dex.pid" ] && kill -0 "$(cat "$RUN/dex.pid")" 2>/dev/null; then
  log "Dex already running on port $PORT (pid $(cat "$RUN/dex.pid")); run down.sh $PORT first"
  exit 1
fi

# Refuse a port that something else already answers on (its discovery document would fool the
# readiness check below).
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
  log "127.0.0.1:$PORT is already in use"
  exit 1
fi

# Render the config.
uris=""
IFS=',' read -ra arr <<<"$REDIRECTS"
for u in "${arr[@]}"; do uris+="  - '$u'"$'\n'; done
awk -v port="$PORT" -v ipath="$ISSUER_PATH" -v uris="${uris%$'\n'}" \
  '{ if ($0 == "@REDIRECT_URIS@") print uris; else { gsub(/@PORT@/, port); gsub(/@ISSUER_PATH@/, ipath); print } }' \
  "$HERE/dex-config.yaml.tmpl" >"$RUN/config.yaml"

ISSUER=http://127.0.0.1:$PORT$ISSUER_PATH
t0=$(date +%s%N)
nohup "$BIN" serve "$RUN/config.yaml" >"$RUN/dex.log" 2>&1 </dev/null &
echo $! >"$RUN/dex.pid"

for _ in $(seq 1 200); do
  if curl -fsS -o /dev/null "$ISSUER/.well-known/openid-configuration" 2>/dev/null &&
     kill -0 "$(cat "$RUN/dex.pid")" 2>/dev/null; then
    log "Dex $DEX_VERSION up on $ISSUER (pid $(cat "$RUN/dex.pid"), ready in $((($(date +%s%N) - t0) / 1000000)) ms, log $RUN/dex.log)"
    echo "$ISSUER"
    exit 0
  fi
  if ! kill -0 "$(cat "$RUN/dex.pid")" 2>/dev/null; then
    log "Dex exited during startup:"; tail -20 "$RUN/dex.log" >&2; rm -f "$RUN/dex.pid"; exit 1
  fi
  sleep 0.05
done
log "Dex did not become ready in 10 s; see $RUN/dex.log"
exit 1
