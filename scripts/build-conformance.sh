#!/usr/bin/env bash
# Builds what the node conformance run (test/conformance/run.ts) needs besides
# scripts/build-k8s.sh's kube-apiserver, kubelet and kubectl, from the same Go
# module (test/cluster/go.mod) into the same cache directory
# (default /var/cache/klet-k8s/<version>/):
#   e2e.test                the Kubernetes e2e suite (the long pole: 20-40 min cold on 2 cores)
#   ginkgo                  the ginkgo CLI of the version e2e.test links (they must match)
#   kube-controller-manager, kube-scheduler
#   agnhost, nonewprivs     static test image binaries (test/images/...)
#   pause                   build/pause/linux/pause.c, static
#   crane                   go-containerregistry's CLI: the local registry and the pushes
#   nc-openbsd              Debian's netcat-openbsd nc (apt-get download), for agnhost:
#                           the UDP specs run `nc -u`, which busybox's nc lacks
# Everything is stamped with the module's version (client-go cannot parse an
# unstamped one). Each file is renamed into place only when it is complete;
# nothing present is rebuilt. Prints the directory.
#   KLET_K8S_CACHE   cache root (default /var/cache/klet-k8s)
#   ONLY             space-separated subset of the names above to build
set -euo pipefail
cd "$(dirname "$0")/../test/cluster"
version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' go.mod)
[ -n "$version" ] || { echo "build-conformance: no k8s.io/kubernetes version in test/cluster/go.mod" >&2; exit 1; }
out="${KLET_K8S_CACHE:-/var/cache/klet-k8s}/$version"
crane_version=v0.20.6
names=${ONLY:-"e2e.test ginkgo kube-controller-manager kube-scheduler agnhost nonewprivs pause crane nc-openbsd"}
missing=()
for n in $names; do [ -x "$out/$n" ] || missing+=("$n"); done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "build-conformance: go is not installed (https://go.dev/dl/)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d "$out/.build-conformance.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
minor=${version#v}; major=${minor%%.*}; minor=${minor#*.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$version"
export GOFLAGS=-mod=mod CGO_ENABLED=0
go mod download k8s.io/kubernetes
src=$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)
place() { mv "$tmp/$1" "$out/$1"; echo "build-conformance: $out/$1 ($(( $(date +%s) - start )) s)" >&2; }
for n in "${missing[@]}"; do
  start=$(date +%s)
  echo "build-conformance: building $n $version" >&2
  case "$n" in
    e2e.test) go test -c -trimpath -vet=off -ldflags "$ldflags" -o "$tmp/e2e.test" k8s.io/kubernetes/test/e2e ;;
    # The CLI from the version of the library this module requires (go.mod), as e2e.test links it.
    ginkgo) go build -trimpath -o "$tmp/ginkgo" github.com/onsi/ginkgo/v2/ginkgo ;;
    kube-controller-manager|kube-scheduler) go build -trimpath -ldflags "$ldflags" -o "$tmp/$n" "k8s.io/kubernetes/cmd/$n" ;;
    agnhost|nonewprivs) go build -trimpath -ldflags "-s -w" -o "$tmp/$n" "k8s.io/kubernetes/test/images/$n" ;;
    pause) gcc -Os -static -Wall -DVERSION="$version" -o "$tmp/pause" "$src/build/pause/linux/pause.c" && strip "$tmp/pause" ;;
    crane) GOFLAGS= GOBIN="$tmp" go install "github.com/google/go-containerregistry/cmd/crane@$crane_version" ;;
    nc-openbsd) (cd "$tmp" && apt-get download -q netcat-openbsd >/dev/null && dpkg-deb -x netcat-openbsd_*.deb nc-root \
        && cp nc-root/bin/nc.openbsd nc-openbsd && rm -rf nc-root netcat-openbsd_*.deb) ;;
    *) echo "build-conformance: unknown name $n" >&2; exit 2 ;;
  esac
  place "$n"
done
echo "$out"
