#!/usr/bin/env bash
# The rows of commands, files and forwarding (issue 21) for `make bench`:
# each path through the gateway against its direct anchor in the same run,
# printed as a ratio (gateway time / anchor time; below 1 is faster).
#
#   ssh I@gw true          vs  docker exec C true              (median of N)
#   scp up / down (SFTP)   vs  docker cp to / from C            (SIZE MiB)
#   scp up / down (SFTP)   vs  sftp -D over docker exec -i C HOLDER sftp
#                              (the exec floor: no SSH, no gateway)
#   scp up / down (SFTP)   vs  scp to a plain OpenSSH sshd      (when sshd exists)
#   ssh termgate@gw help   vs  ssh to that sshd true            (the handshake)
#   ssh -W to nc in C      vs  docker exec -i C nc              (SIZE MiB, one way)
#   the same and scp with -c aes128-gcm@openssh.com (the fast cipher)
#   PUT / GET files route  vs  docker cp to / from C            (SIZE MiB, curl)
#
# Every transfer runs ROUNDS times, the gateway's and its anchors'
# interleaved round by round, and the row shows the medians: one 100 MiB
# transfer on a 2-core machine moves by 30 % from one run to the next.
#
# Usage: bench/remote.sh BIN [SIZE_MIB] [N] [ROUNDS]. Needs Docker, OpenSSH
# and the image termgate-test:busybox (make test-image); everything on
# loopback.
set -euo pipefail
BIN=${1:?usage: bench/remote.sh BIN [SIZE_MIB] [N] [ROUNDS]}
SIZE=${2:-100}
N=${3:-20}
ROUNDS=${4:-3}
IMAGE=termgate-test:busybox
T=$(mktemp -d)
C=tgbench-remote-$$
GW=
SSHD=
cleanup() {
	[ -n "$GW" ] && kill "$GW" 2>/dev/null && wait "$GW" 2>/dev/null || true
	[ -n "$SSHD" ] && kill "$SSHD" 2>/dev/null || true
	docker rm -f "$C" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
row() { printf '%-34s %10s s %10s s   %s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"; }
# timed NAME CMD...: runs CMD, appends its seconds to $T/t.NAME.
timed() {
	local name=$1 a
	shift
	a=$(now)
	"$@"
	secs "$a" "$(now)" >>"$T/t.$name"
}
med() { median <"$T/t.$1"; }

docker run -d --init --network none --label tgbench-remote --name "$C" "$IMAGE" >/dev/null
ssh-keygen -q -t ed25519 -N '' -f "$T/key"
mkdir -p "$T/state"
cp "$T/key.pub" "$T/state/authorized_keys"
"$BIN" --state-dir "$T/state" --ssh-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 \
	--instance-label tgbench-remote --log-format json 2>"$T/gw.log" &
GW=$!
for _ in $(seq 100); do
	PORT=$(sed -n 's/.*"msg":"termgate is listening","ssh":"127.0.0.1:\([0-9]*\)".*/\1/p' "$T/gw.log")
	[ -n "$PORT" ] && break
	sleep 0.1
done
[ -n "${PORT:-}" ] || { cat "$T/gw.log" >&2; echo "remote.sh: the gateway did not start" >&2; exit 1; }
OPTS=(-F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes
	-o IdentitiesOnly=yes -o LogLevel=ERROR -i "$T/key")
gssh() { ssh "${OPTS[@]}" -p "$PORT" "$@"; }
gscp() { scp "${OPTS[@]}" -P "$PORT" "$@"; }
same() { cmp -s "$T/data" "$1" || { echo "remote.sh: $2 differs" >&2; exit 1; }; }

head -c "$((SIZE << 20))" /dev/urandom >"$T/data"
echo "termgate remote paths ($SIZE MiB transfers, median of $ROUNDS; $N commands; ratio = gateway / anchor)"
printf '%-34s %12s %12s   %s\n' path gateway anchor ratio

# Commands: the first one installs nothing (no holder needed); warm both.
gssh "$C@127.0.0.1" true
docker exec "$C" true
for _ in $(seq "$N"); do a=$(now); gssh "$C@127.0.0.1" true; secs "$a" "$(now)"; done | median >"$T/g"
for _ in $(seq "$N"); do a=$(now); docker exec "$C" true; secs "$a" "$(now)"; done | median >"$T/d"
row "ssh I@gw true (median)" "$(cat "$T/g")" "$(cat "$T/d")"

# A first scp puts the holder there; the exec floor runs that holder.
gscp "$T/key.pub" "$C@127.0.0.1:/tmp/warm"
HOLDER=$(docker exec "$C" sh -c 'for d in /root /tmp /var/tmp /run ""; do ls "$d"/.termgate/holder-* 2>/dev/null; done; true' | head -n 1)
[ -n "$HOLDER" ] || { echo "remote.sh: no holder in $C after an scp" >&2; exit 1; }
# The holder's ready line (holder.ToolReady) is dropped before the client reads.
printf '#!/bin/sh\ndocker exec -i %s %s sftp | { head -c 22 >/dev/null; exec cat; }\n' "$C" "$HOLDER" >"$T/execsftp"
chmod +x "$T/execsftp"

# The plain OpenSSH sshd on loopback (ensure-sshd.sh), for scp and the handshake.
if SSHD_BIN=$(command -v sshd || echo /usr/sbin/sshd) && [ -x "$SSHD_BIN" ] && [ "$(id -u)" = 0 ]; then
	ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey"
	cat >"$T/sshd_config" <<CONF
ListenAddress 127.0.0.1:22922
HostKey $T/hostkey
AuthorizedKeysFile $T/key.pub
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $T/sshd.pid
Subsystem sftp internal-sftp
CONF
	mkdir -p /run/sshd
	"$SSHD_BIN" -D -f "$T/sshd_config" -E "$T/sshd.log" &
	SSHD=$!
	sleep 0.5
	kill -0 "$SSHD" 2>/dev/null || { cat "$T/sshd.log" >&2; exit 1; }
fi
pscp() { scp "${OPTS[@]}" -P 22922 "$@"; }

# Forwarding targets in the container: a sink for the stream, a greeter
# for the first byte.
docker exec -d "$C" sh -c 'nc -ll -p 9000 -e sh -c "cat >/dev/null"'
docker exec -d "$C" sh -c 'nc -ll -p 9001 -e echo hi'
sleep 0.3

HPORT=$(sed -n 's/.*"msg":"termgate is listening".*"http":"127.0.0.1:\([0-9]*\)".*/\1/p' "$T/gw.log")
TOKEN=$(awk 'NF && $1 !~ /^#/ { print $1; exit }' "$T/state/api_token")
URL="http://127.0.0.1:$HPORT/api/instances/$C/files"
GCM=(-c aes128-gcm@openssh.com)

for _ in $(seq "$ROUNDS"); do
	timed up gscp "$T/data" "$C@127.0.0.1:/tmp/up"
	timed cp_up docker cp "$T/data" "$C:/tmp/cp"
	timed floor_up sftp -q -D "$T/execsftp" -b - >/dev/null <<<"put $T/data /tmp/floor"
	timed down gscp "$C@127.0.0.1:/tmp/up" "$T/down"
	same "$T/down" "scp download"
	timed cp_down docker cp "$C:/tmp/cp" "$T/cpdown"
	timed floor_down sftp -q -D "$T/execsftp" -b - >/dev/null <<<"get /tmp/floor $T/floordown"
	same "$T/floordown" "sftp over exec"
	if [ -n "$SSHD" ]; then
		timed plain_up pscp "$T/data" root@127.0.0.1:"$T/plain"
		timed plain_down pscp root@127.0.0.1:"$T/plain" "$T/plaindown"
	fi
	timed put curl -fsS -H "Authorization: Bearer $TOKEN" -T "$T/data" "$URL?path=/tmp/http"
	timed get curl -fsS -H "Authorization: Bearer $TOKEN" -o "$T/httpdown" "$URL?path=/tmp/http"
	same "$T/httpdown" "HTTP download"
	timed w gssh -W 127.0.0.1:9000 "$C@127.0.0.1" <"$T/data" >/dev/null
	timed w_gcm gssh "${GCM[@]}" -W 127.0.0.1:9000 "$C@127.0.0.1" <"$T/data" >/dev/null
	timed nc docker exec -i "$C" nc 127.0.0.1 9000 <"$T/data" >/dev/null
	timed up_gcm gscp "${GCM[@]}" "$T/data" "$C@127.0.0.1:/tmp/upgcm"
	timed down_gcm gscp "${GCM[@]}" "$C@127.0.0.1:/tmp/upgcm" "$T/downgcm"
	same "$T/downgcm" "scp (aes128-gcm) download"
done

row "scp upload" "$(med up)" "$(med cp_up)"
row "scp download" "$(med down)" "$(med cp_down)"
row "scp upload vs sftp over exec" "$(med up)" "$(med floor_up)"
row "scp download vs sftp over exec" "$(med down)" "$(med floor_down)"
if [ -n "$SSHD" ]; then
	row "scp upload vs plain sshd" "$(med up)" "$(med plain_up)"
	row "scp download vs plain sshd" "$(med down)" "$(med plain_down)"
	# What the SSH handshake alone costs: a gateway command that touches no
	# instance against `true` on the plain sshd.
	for _ in $(seq "$N"); do a=$(now); gssh termgate@127.0.0.1 help >/dev/null; secs "$a" "$(now)"; done | median >"$T/g"
	for _ in $(seq "$N"); do a=$(now); ssh "${OPTS[@]}" -p 22922 root@127.0.0.1 true; secs "$a" "$(now)"; done | median >"$T/d"
	row "ssh gw help vs plain ssh true" "$(cat "$T/g")" "$(cat "$T/d")"
fi
row "HTTP PUT file" "$(med put)" "$(med cp_up)"
row "HTTP GET file" "$(med get)" "$(med cp_down)"
row "ssh -W stream (one way)" "$(med w)" "$(med nc)"
# AES-GCM, which OpenSSH picks when told to (-c, or Ciphers in
# ~/.ssh/config): its default chacha20-poly1305 has no assembly in
# x/crypto on amd64 and is the gateway's largest cost on a bulk stream.
row "ssh -W stream, aes128-gcm" "$(med w_gcm)" "$(med nc)"
row "scp upload, aes128-gcm" "$(med up_gcm)" "$(med cp_up)"
row "scp download, aes128-gcm" "$(med down_gcm)" "$(med cp_down)"
row "scp upload, aes128-gcm vs exec" "$(med up_gcm)" "$(med floor_up)"
row "scp download, aes128-gcm vs exec" "$(med down_gcm)" "$(med floor_down)"

# Time to a first byte of a new forwarded connection against a fresh exec.
for _ in $(seq "$N"); do a=$(now); gssh -W 127.0.0.1:9001 "$C@127.0.0.1" </dev/null | head -c 2 >/dev/null; secs "$a" "$(now)"; done | median >"$T/g"
for _ in $(seq "$N"); do a=$(now); docker exec "$C" echo hi | head -c 2 >/dev/null; secs "$a" "$(now)"; done | median >"$T/d"
row "forward first byte (median)" "$(cat "$T/g")" "$(cat "$T/d")"
