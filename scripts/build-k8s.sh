#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager (CSR signing for the TLS
# bootstrap tests), kubelet and kubectl (Debian 12 has no kubectl
# package) from the Go module in test/cluster into a
# cache directory outside the repository (default
# /var/cache/klet-k8s/<version>/), for the cluster tests and benchmarks.
# Nothing is built when both binaries are already there. Prints the directory.
#   KLET_K8S_CACHE   cache root (default /var/cache/klet-k8s)
# The Go module cache (~/go/pkg/mod) and build cache (~/.cache/go-build) make a
# rebuild after a version bump fast; the first build takes ~10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../test/cluster"
version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' go.mod)
[ -n "$version" ] || { echo "build-k8s: no k8s.io/kubernetes version in test/cluster/go.mod" >&2; exit 1; }
out="${KLET_K8S_CACHE:-/var/cache/klet-k8s}/$version"
if [ -x "$out/kube-apiserver" ] && [ -x "$out/kube-controller-manager" ] && [ -x "$out/kubelet" ] && [ -x "$out/kubectl" ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "build-k8s: go is not installed (https://go.dev/dl/)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "build-k8s: building kube-apiserver, kube-controller-manager, kubelet and kubectl $version into $out" >&2
export GOFLAGS=-mod=mod CGO_ENABLED=0
go mod download k8s.io/kubernetes
go build -trimpath -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/client-go/pkg/version.gitVersion=$version" \
  -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl
# Rename into place only when all are built, so a half build is never taken for done.
mv "$tmp/kube-apiserver" "$tmp/kube-controller-manager" "$tmp/kubelet" "$tmp/kubectl" "$out/"
echo "$out"
