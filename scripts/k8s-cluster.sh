#!/usr/bin/env bash
# A real single-node Kubernetes test cluster on this machine, for the
# kubernetes backend's tests (README "Kubernetes"):
#
#   scripts/k8s-cluster.sh build        build the binaries and images (cached)
#   scripts/k8s-cluster.sh up           build if needed, then start the cluster
#   scripts/k8s-cluster.sh down [--purge]  stop it (--purge also wipes its state)
#   scripts/k8s-cluster.sh status       exit 0 when the cluster answers
#   scripts/k8s-cluster.sh env          print the KUBECONFIG/PATH exports
#   scripts/k8s-cluster.sh logs [LINES] the end of every component's log
#   scripts/k8s-cluster.sh restart-apiserver  stop and start kube-apiserver
#
# Everything lives in TERMGATE_K8S_DIR (default /var/cache/termgate-k8s),
# outside the repository: bin/ (one multi-call binary holding kube-apiserver,
# kubelet, kube-controller-manager, kube-scheduler, kubectl and etcd, built
# from the Go module proxy from scripts/k8s/src), gomod/ and gocache/ (reused
# by the next build), images/, pki/, etc/ (rendered from scripts/k8s/etc),
# var/ and run/ (state), log/ (one log per component). The build takes 6
# minutes of two quiet cores the first time (32 on a machine busy with other
# work), seconds when cached.
#
# It needs root, containerd, runc, containernetworking-plugins,
# busybox-static, gcc, openssl and curl (Debian's; installed when missing).
# The containerd is private (own socket, root and state under the
# directory; Docker's is untouched); pods get 10.88.0.0/24 on the bridge
# tgk8s0 without any route off the node; the API server listens on
# 127.0.0.1:6443. How each setting came about:
# shared/research/k8s-spike/README.md.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

SRC=$(cd "$(dirname "$0")/k8s" && pwd)
K=${TERMGATE_K8S_DIR:-/var/cache/termgate-k8s}
B=$K/bin L=$K/log R=$K/run
BRIDGE=tgk8s0
export PATH=$B:$PATH KUBECONFIG=$K/etc/admin.kubeconfig

say() { printf 'k8s-cluster: %s\n' "$*"; }
die() { printf 'k8s-cluster: %s\n' "$*" >&2; exit 1; }
T0=$(date +%s.%N)
ts() { say "$(printf '[%6.1fs] %s' "$(echo "$(date +%s.%N) - $T0" | bc)" "$*")"; }

# The components the cluster runs, in start order.
COMPONENTS="etcd containerd kube-apiserver kube-controller-manager kube-scheduler kubelet"

need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (containerd, kubelet and the pod network do)"; }

install_packages() {
	local need=()
	command -v containerd >/dev/null || need+=(containerd)
	command -v runc >/dev/null || need+=(runc)
	[ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
	[ -x /bin/busybox ] || need+=(busybox-static)
	command -v gcc >/dev/null || need+=(gcc libc6-dev)
	command -v openssl >/dev/null || need+=(openssl)
	command -v curl >/dev/null || need+=(curl)
	command -v bc >/dev/null || need+=(bc)
	[ ${#need[@]} -eq 0 ] && return 0
	need_root "installing ${need[*]}"
	say "installing ${need[*]}"
	# Other apt runs on the machine hold the lock for a while: wait for it.
	apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${need[@]}" >/dev/null 2>&1 || {
		apt-get -o DPkg::Lock::Timeout=300 update -qq
		apt-get -o DPkg::Lock::Timeout=300 install -y -qq "${need[@]}" >/dev/null
	} || die "apt-get install ${need[*]} failed"
}

# stamp FILES... prints a digest of what a build step depends on.
stamp() { { go version; cat "$@"; } | sha256sum | cut -d' ' -f1; }

build_bin() {
	local want
	want=$(stamp "$SRC/src/go.mod" "$SRC/src/go.sum" "$SRC/src/cmd/k8s/main.go")
	if [ -x "$B/k8s" ] && [ "$(cat "$B/.stamp" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	say "building Kubernetes into $B (cold: 6 min on 2 quiet cores, far longer on busy ones; log $L/build.log)"
	mkdir -p "$K/src" "$K/tmp" "$B" "$L"
	rm -rf "$K/src" && cp -r "$SRC/src" "$K/src"
	local kv minor ld p t
	t=$(date +%s)
	(
		export GOMODCACHE=$K/gomod GOCACHE=$K/gocache GOTMPDIR=$K/tmp GOFLAGS=-modcacherw CGO_ENABLED=0
		cd "$K/src"
		kv=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
		minor=$(cut -d. -f2 <<<"$kv")
		ld="-s -w"
		for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			ld="$ld -X $p.gitVersion=$kv -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
		done
		# Bounded: a build that cannot finish (a stuck download, a
		# machine far too busy) fails CI with a message, not at its limit.
		timeout "${TERMGATE_K8S_BUILD_TIMEOUT:-50m}" nice -n 19 go build -trimpath -ldflags "$ld" -o "$B/k8s.new" ./cmd/k8s
	) >"$L/build.log" 2>&1 || {
		tail -n 30 "$L/build.log" >&2
		die "building Kubernetes failed or took over ${TERMGATE_K8S_BUILD_TIMEOUT:-50m} (log $L/build.log; the build cache in $K/gocache keeps what was done, so running it again resumes)"
	}
	mv "$B/k8s.new" "$B/k8s"
	for c in kube-apiserver kubelet kube-controller-manager kube-scheduler kubectl etcd; do ln -sf k8s "$B/$c"; done
	echo "$want" >"$B/.stamp"
	say "built in $(($(date +%s) - t)) s"
}

build_images() {
	local want d=$K/images
	want=$(stamp "$SRC/images/pause.c" "$SRC/images/mkimage.sh" /bin/busybox)
	if [ -f "$d/pause.tar" ] && [ -f "$d/busybox.tar" ] && [ "$(cat "$d/.stamp" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	say "building the images localhost/pause:1 and localhost/busybox:1"
	rm -rf "$d" && mkdir -p "$d/pause"
	gcc -static -Os -s -o "$d/pause/pause" "$SRC/images/pause.c"
	bash "$SRC/images/mkimage.sh" localhost/pause:1 "$d/pause" "$d/pause.tar" '["/pause"]' 'null'
	local r=$d/busybox
	mkdir -p $r/bin $r/etc $r/tmp $r/root $r/proc $r/sys $r/dev $r/home $r/var $r/usr/bin $r/sbin $r/usr/sbin
	chmod 1777 $r/tmp
	cp /bin/busybox $r/bin/busybox
	for a in $(/bin/busybox --list-full); do [ -e "$r/$a" ] || ln -s /bin/busybox "$r/$a"; done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n' >$r/etc/passwd
	printf 'root:x:0:\nnogroup:x:65534:\n' >$r/etc/group
	bash "$SRC/images/mkimage.sh" localhost/busybox:1 $r "$d/busybox.tar" 'null' '["sh"]'
	echo "$want" >"$d/.stamp"
}

# pki makes a throw-away CA, the components' certificates and kubeconfigs.
pki() {
	[ -f "$K/pki/ca.crt" ] && [ -f "$K/etc/admin.kubeconfig" ] && return 0
	local P=$K/pki E=$K/etc node=127.0.0.1
	rm -rf "$P" && mkdir -p "$P" "$E"
	(
		cd "$P"
		openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null
		openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=termgate-test-ca" -out ca.crt
		mk() { # name CN O EKU SAN
			local n=$1 cn=$2 o=$3 eku=$4 san=${5:-} subj
			openssl ecparam -name prime256v1 -genkey -noout -out $n.key 2>/dev/null
			subj="/CN=$cn"
			[ -n "$o" ] && subj="/O=$o$subj"
			openssl req -new -key $n.key -subj "$subj" -out $n.csr
			{
				echo "basicConstraints=CA:FALSE"
				echo "keyUsage=critical,digitalSignature,keyEncipherment"
				echo "extendedKeyUsage=$eku"
				[ -n "$san" ] && echo "subjectAltName=$san"
			} >$n.ext
			openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -sha256 -extfile $n.ext -out $n.crt 2>/dev/null
			rm -f $n.csr $n.ext
		}
		mk apiserver kube-apiserver "" serverAuth "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1"
		mk apiserver-kubelet-client kube-apiserver-kubelet-client system:masters clientAuth
		mk admin kubernetes-admin system:masters clientAuth
		mk kubelet system:node:$node system:nodes clientAuth
		mk kubelet-serving $node "" serverAuth "DNS:localhost,IP:127.0.0.1"
		mk controller-manager system:kube-controller-manager "" clientAuth
		mk scheduler system:kube-scheduler "" clientAuth
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
	)
	kc() { # file user cert
		cat >"$E/$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: termgate-test
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: $P/ca.crt
users:
- name: $2
  user:
    client-certificate: $P/$3.crt
    client-key: $P/$3.key
contexts:
- name: termgate-test
  context: {cluster: termgate-test, user: $2, namespace: default}
current-context: termgate-test
KC
	}
	kc kubelet system:node:$node kubelet
	kc controller-manager system:kube-controller-manager controller-manager
	kc scheduler system:kube-scheduler scheduler
	kc admin admin admin # last: its presence means the PKI is complete
}

render() {
	# containerd.toml's CRI plugin reads its CNI config from etc/cni/net.d.
	mkdir -p "$K/etc/cni/net.d"
	local f
	for f in containerd.toml kubelet.yaml; do
		sed "s#@K8S_DIR@#$K#g" "$SRC/etc/$f" >"$K/etc/$f"
	done
	sed "s#@K8S_DIR@#$K#g; s#@BRIDGE@#$BRIDGE#g" "$SRC/etc/cni/10-termgate.conflist" >"$K/etc/cni/net.d/10-termgate.conflist"
}

alive() { [ -f "$R/$1.pid" ] && kill -0 "$(cat "$R/$1.pid")" 2>/dev/null; }

apiserver_ready() { curl -fsS --max-time 2 --cacert "$K/pki/ca.crt" https://127.0.0.1:6443/readyz >/dev/null 2>&1; }

is_up() {
	local c
	for c in $COMPONENTS; do alive "$c" || return 1; done
	apiserver_ready && kubectl get node 127.0.0.1 >/dev/null 2>&1
}

start() { # start NAME CMD...: detached, in its own session, logging to log/NAME.log
	local n=$1
	shift
	setsid nohup "$@" >"$L/$n.log" 2>&1 </dev/null &
	echo $! >"$R/$n.pid"
}

# wait_for WHAT SECONDS CMD...: polls CMD every 0.2 s; on timeout shows the logs.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		if "$@" >/dev/null 2>&1; then
			ts "$what"
			return 0
		fi
		sleep 0.2
	done
	local c
	for c in $COMPONENTS; do
		alive "$c" || say "$c is not running; last lines of $L/$c.log:" >&2
		alive "$c" || tail -n 15 "$L/$c.log" >&2 2>/dev/null || true
	done
	die "timed out after ${secs}s waiting for: $what (logs in $L)"
}

# start_apiserver starts kube-apiserver (also for restart-apiserver).
start_apiserver() {
	start kube-apiserver "$B/kube-apiserver" \
		--etcd-servers=http://127.0.0.1:2379 \
		--bind-address=127.0.0.1 --secure-port=6443 --advertise-address=127.0.0.1 \
		--endpoint-reconciler-type=none \
		--cert-dir="$K/var/apiserver" \
		--tls-cert-file="$K/pki/apiserver.crt" --tls-private-key-file="$K/pki/apiserver.key" \
		--client-ca-file="$K/pki/ca.crt" \
		--kubelet-client-certificate="$K/pki/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$K/pki/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority="$K/pki/ca.crt" --kubelet-preferred-address-types=InternalIP,Hostname \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$K/pki/sa.pub" --service-account-signing-key-file="$K/pki/sa.key" \
		--service-cluster-ip-range=10.96.0.0/16 \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--allow-privileged=true --profiling=false --v=1
}

up() {
	need_root "up"
	if is_up; then
		say "already up (KUBECONFIG=$KUBECONFIG)"
		return 0
	fi
	local c
	for c in $COMPONENTS; do
		if alive "$c"; then
			say "a partial cluster runs ($c): stopping it first"
			down
			break
		fi
	done
	for p in 6443 2379 2380 10250; do
		! ss -ltn "sport = :$p" | grep -q LISTEN || die "port $p is taken by another process (another cluster?): $(ss -ltnpH "sport = :$p")"
	done
	install_packages
	build_bin
	build_images
	pki
	render
	T0=$(date +%s.%N)
	mkdir -p "$L" "$R/containerd" "$K/var/etcd" "$K/var/kubelet" "$K/var/log/pods" "$K/var/cni"
	# kubelet rewrites these kernel tunables; down puts them back.
	[ -f "$R/sysctl.saved" ] || sysctl vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops \
		kernel.keys.root_maxkeys kernel.keys.root_maxbytes >"$R/sysctl.saved"

	start etcd "$B/etcd" --name termgate --data-dir "$K/var/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster termgate=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
		--unsafe-no-fsync --log-level warn
	start containerd containerd --config "$K/etc/containerd.toml"
	wait_for "etcd ready" 60 curl -fsS http://127.0.0.1:2379/health

	start_apiserver

	local CTR="ctr -a $R/containerd/containerd.sock -n k8s.io"
	wait_for "containerd ready" 60 $CTR version
	$CTR images import --no-unpack=false "$K/images/pause.tar" >/dev/null
	$CTR images import "$K/images/busybox.tar" >/dev/null
	local img
	for img in "$K"/images/extra/*.tar; do # images other tests put there (the gateway's)
		[ -f "$img" ] && $CTR images import "$img" >/dev/null
	done
	ts "images imported"
	wait_for "kube-apiserver ready" 90 apiserver_ready

	start kube-controller-manager "$B/kube-controller-manager" \
		--kubeconfig="$K/etc/controller-manager.kubeconfig" \
		--authentication-kubeconfig="$K/etc/controller-manager.kubeconfig" \
		--authorization-kubeconfig="$K/etc/controller-manager.kubeconfig" \
		--bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
		--service-account-private-key-file="$K/pki/sa.key" --root-ca-file="$K/pki/ca.crt" \
		--use-service-account-credentials=true --profiling=false --v=1
	start kube-scheduler "$B/kube-scheduler" \
		--kubeconfig="$K/etc/scheduler.kubeconfig" \
		--authentication-kubeconfig="$K/etc/scheduler.kubeconfig" \
		--authorization-kubeconfig="$K/etc/scheduler.kubeconfig" \
		--bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false --profiling=false --v=1
	start kubelet "$B/kubelet" --config="$K/etc/kubelet.yaml" --kubeconfig="$K/etc/kubelet.kubeconfig" \
		--root-dir="$K/var/kubelet" --cert-dir="$K/var/kubelet/pki" --hostname-override=127.0.0.1 --v=1

	wait_for "node registered" 90 kubectl get node 127.0.0.1
	wait_for "node Ready" 90 kubectl wait --for=condition=Ready node/127.0.0.1 --timeout=1s
	wait_for "default service account" 90 kubectl -n default get serviceaccount default
	ts "cluster up (KUBECONFIG=$KUBECONFIG)"
}

stop() { # stop NAME: SIGTERM the recorded pid, SIGKILL after 10 s
	alive "$1" || {
		rm -f "$R/$1.pid"
		return 0
	}
	local p i
	p=$(cat "$R/$1.pid")
	kill "$p" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.2
	done
	kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
	rm -f "$R/$1.pid"
	say "stopped $1 ($p)"
}

down() {
	need_root "down"
	# Delete the pods while kubelet and containerd still run, so that their
	# containers, sandboxes and network are torn down properly.
	if alive kube-apiserver && alive kubelet && [ -x "$B/kubectl" ]; then
		timeout 70 kubectl delete pods --all -A --grace-period=1 --timeout=60s --wait=true >/dev/null 2>&1 || true
	fi
	stop kube-scheduler
	stop kube-controller-manager
	stop kubelet
	if alive containerd; then
		local CTR="ctr -a $R/containerd/containerd.sock -n k8s.io" t
		for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
		sleep 1
		for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks delete -f "$t" >/dev/null 2>&1 || true; done
	fi
	stop containerd
	stop kube-apiserver
	stop etcd
	# What kubelet and containerd left mounted under the directory, deepest first.
	awk -v k="$K" 'index($2, k "/var/") == 1 || index($2, k "/run/") == 1 {print $2}' /proc/mounts | sort -r |
		while read -r m; do umount -l "$m" || true; done
	if ip link show $BRIDGE >/dev/null 2>&1; then ip link del $BRIDGE && say "deleted bridge $BRIDGE"; fi
	if [ -f "$R/sysctl.saved" ]; then sysctl -q -p "$R/sysctl.saved" && rm -f "$R/sysctl.saved"; fi
	local c
	for c in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/unified/kubepods; do
		[ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
	if [ "${1:-}" = --purge ]; then
		rm -rf "$K/var" "$K/run" "$K/log" "$K/pki" "$K/etc"
		say "purged the cluster's state (the build cache stays)"
	fi
}

# restart_apiserver stops kube-apiserver and starts it again (the tests of
# the gateway's watch reconnect use it): every client's watch and exec
# stream through it breaks.
restart_apiserver() {
	need_root "restart-apiserver"
	is_up || die "not up (try: $0 up)"
	stop kube-apiserver
	ts "kube-apiserver stopped"
	start_apiserver
	wait_for "kube-apiserver ready again" 90 apiserver_ready
}

# logs prints the last lines of every component's log (CI does on failure).
logs() {
	local c n=${1:-40}
	for c in $COMPONENTS; do
		[ -f "$L/$c.log" ] || continue
		if alive "$c"; then say "--- $c (running), last $n lines of $L/$c.log"; else say "--- $c (NOT running), last $n lines of $L/$c.log"; fi
		tail -n "$n" "$L/$c.log"
	done
	[ -f "$L/build.log" ] && { say "--- last 20 lines of $L/build.log"; tail -n 20 "$L/build.log"; }
	if [ -x "$B/kubectl" ] && apiserver_ready; then
		say "--- nodes and pods"
		timeout 20 kubectl get nodes -o wide 2>&1 || true
		timeout 20 kubectl get pods -A -o wide 2>&1 || true
		timeout 20 kubectl get events -A --sort-by=.lastTimestamp 2>&1 | tail -n 30 || true
	fi
}

case "${1:-}" in
build)
	install_packages
	build_bin
	build_images
	;;
up) up ;;
down) down "${2:-}" ;;
status)
	is_up || die "not up (try: $0 up)"
	say "up (KUBECONFIG=$KUBECONFIG)"
	;;
restart-apiserver) restart_apiserver ;;
logs) logs "${2:-40}" ;;
env) printf 'export KUBECONFIG=%s PATH=%s:$PATH\n' "$KUBECONFIG" "$B" ;;
*) die "usage: $0 build|up|down [--purge]|status|env|logs [LINES]|restart-apiserver" ;;
esac
