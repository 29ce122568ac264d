#!/usr/bin/env bash
# Builds containerd 2.x (containerd, containerd-shim-runc-v2, ctr) and runc
# 1.3.x from the Go module proxy into a cache directory outside the repository
# (default /var/cache/klet-containerd/<containerd version>/), for running klet
# and its runtime tests on containerd 2.x:
#   KLET_CONTAINERD=$(scripts/build-containerd.sh)/containerd klet runtime start
# The directory holds all four binaries: klet starts a containerd given by
# path with that directory first on its PATH, so its shim and runc are the ones
# beside it. Nothing present is rebuilt; each binary is renamed into place only
# when it is complete. Prints the directory.
#   KLET_CONTAINERD_CACHE   cache root (default /var/cache/klet-containerd)
#   CONTAINERD_VERSION      default v2.4.2
#   RUNC_VERSION            default v1.3.7
# Needs Go (containerd v2.4 wants go >= 1.26.6), gcc and libseccomp-dev (runc is
# built with cgo and the seccomp tag; scripts/install-deps.sh --dev installs it).
# About 4-6 minutes cold on 2 cores; run it under `nice` beside other builds.
set -euo pipefail
containerd_version=${CONTAINERD_VERSION:-v2.4.2}
runc_version=${RUNC_VERSION:-v1.3.7}
out="${KLET_CONTAINERD_CACHE:-/var/cache/klet-containerd}/$containerd_version"
need=()
for n in containerd containerd-shim-runc-v2 ctr; do [ -x "$out/$n" ] || need+=("$n"); done
# runc is keyed by its own version: a bumped RUNC_VERSION rebuilds only runc.
if ! [ -x "$out/runc" ] || ! "$out/runc" --version 2>/dev/null | grep -qx "runc version ${runc_version#v}"; then need+=(runc); fi
if [ ${#need[@]} -eq 0 ]; then
  echo "$out"
  exit 0
fi
command -v go >/dev/null || { echo "build-containerd: go is not installed (https://go.dev/dl/)" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d "$out/.build.XXXXXX")
# The module cache is read-only: the copies are made writable so they can be removed.
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export GOFLAGS=-mod=mod
# A module's source directory, downloaded through the proxy, copied somewhere
# writable: containerd's go.mod has `exclude` lines, so `go install pkg@version`
# refuses it; built as the main module inside its own directory it is fine.
module_copy() {
  local dir
  dir=$(cd "$tmp" && go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || { echo "build-containerd: go mod download $1@$2 gave no directory" >&2; exit 1; }
  cp -r "$dir" "$tmp/$3"
  chmod -R u+w "$tmp/$3"
  echo "$tmp/$3"
}
place() { mv "$tmp/bin/$1" "$out/$1"; echo "build-containerd: $out/$1" >&2; }
mkdir -p "$tmp/bin"
containerd_needed=false
for n in "${need[@]}"; do [ "$n" = runc ] || containerd_needed=true; done
if $containerd_needed; then
  echo "build-containerd: building containerd $containerd_version into $out" >&2
  src=$(module_copy github.com/containerd/containerd/v2 "$containerd_version" containerd)
  tags="urfave_cli_no_docs"
  # The btrfs snapshotter needs libbtrfs headers (libbtrfs-dev); without them it is left out.
  [ -e /usr/include/btrfs/ioctl.h ] || tags="$tags no_btrfs"
  pkg=github.com/containerd/containerd/v2
  ldflags="-s -w -X $pkg/version.Version=$containerd_version -X $pkg/version.Package=$pkg"
  (
    cd "$src"
    CGO_ENABLED=1 go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$tmp/bin/" ./cmd/containerd ./cmd/ctr
    # The shim as upstream builds it: static, without gRPC (it speaks ttrpc).
    CGO_ENABLED=0 go build -trimpath -tags "$tags no_grpc" -ldflags "$ldflags" -o "$tmp/bin/" ./cmd/containerd-shim-runc-v2
  )
  for n in containerd containerd-shim-runc-v2 ctr; do place "$n"; done
fi
for n in "${need[@]}"; do
  [ "$n" = runc ] || continue
  [ -e /usr/include/seccomp.h ] || { echo "build-containerd: runc needs libseccomp-dev (apt-get install libseccomp-dev)" >&2; exit 1; }
  echo "build-containerd: building runc $runc_version into $out" >&2
  src=$(module_copy github.com/opencontainers/runc "$runc_version" runc)
  # The version comes from the module's VERSION file; cgo is needed for libseccomp and nsenter.
  (cd "$src" && CGO_ENABLED=1 go build -trimpath -buildmode=pie -tags "seccomp urfave_cli_no_docs" -ldflags "-s -w" -o "$tmp/bin/runc" .)
  place runc
done
echo "$out"
