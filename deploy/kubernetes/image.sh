#!/usr/bin/env bash
# deploy/kubernetes/image.sh: builds the gateway's FROM scratch image (the
# repository's Dockerfile, the binary built as `make build` does, with the
# durable sessions' holder embedded) as IMAGE (default
# localhost/termgate:k8s, which deployment.yaml names with
# imagePullPolicy: Never) and imports it into the test cluster's private
# containerd (scripts/k8s-cluster.sh). It also leaves the image in
# TERMGATE_K8S_DIR/images/extra/, which the cluster's `up` imports again.
# For another cluster, push IMAGE to its registry instead (and drop
# imagePullPolicy: Never from deployment.yaml).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
K=${TERMGATE_K8S_DIR:-/var/cache/termgate-k8s}
IMAGE=${IMAGE:-localhost/termgate:k8s}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cd "$root"
mkdir -p "$ctx/bin"
CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags=-s -o internal/holderbin/termgate-holder ./cmd/termgate-holder
CGO_ENABLED=0 go build -trimpath -tags holderembed -o "$ctx/bin/termgate" ./cmd/termgate
cp Dockerfile "$ctx/"
docker build --network none -q -t "$IMAGE" "$ctx" >/dev/null
mkdir -p "$K/images/extra"
docker save -o "$K/images/extra/termgate.tar" "$IMAGE"
if [ -S "$K/run/containerd/containerd.sock" ]; then
	PATH=$K/bin:$PATH ctr -a "$K/run/containerd/containerd.sock" -n k8s.io images import "$K/images/extra/termgate.tar" >/dev/null
	echo "image.sh: $IMAGE imported into the test cluster"
else
	echo "image.sh: $IMAGE saved to $K/images/extra/termgate.tar (the cluster is not up: its next start imports it)"
fi
