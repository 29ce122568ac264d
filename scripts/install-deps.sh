#!/usr/bin/env bash
# Installs what klet and its tests need on a Debian/Ubuntu machine (as root):
# the container runtime (containerd with its CRI plugin, runc, the CNI
# plugins), busybox-static for locally built images, etcd-server (the real etcd
# of the control-plane example and tests), gcc + libc6-dev (the static pause
# binary of the sandbox image is compiled from C),
# tools the tests and benchmarks use (openssl: self-signed certificates for the
# HTTPS probe test and the cluster tests; tmux: the dashboard's terminal tests),
# ca-certificates, and a seed Node.js: the distribution's nodejs + npm when no
# npm is on PATH (scripts/bootstrap.sh uses that npm to fetch Node 24 when the
# distribution's Node is older than 22). Only packages that are missing are
# installed; nothing is printed when nothing is missing.
#
#   --dev   also what the development checks of .ci/run need: git, debootstrap
#           (scripts/fresh-machine-test.sh), Go for `npm run check:cri-proto`
#           (golang-go, unless a `go` is on PATH or in /usr/local/go), and
#           libseccomp-dev (runc's seccomp support, for scripts/build-containerd.sh).
set -euo pipefail
pkgs=(containerd runc containernetworking-plugins busybox-static etcd-server gcc libc6-dev iptables iproute2 util-linux procps hyperfine protobuf-compiler time openssl tmux)
pkgs+=(ca-certificates)
# curl: the docs' examples of the local API and port-forward use it (test/docs/docs.test.ts runs them).
pkgs+=(curl)
# systemd: the systemd cgroup driver's test runs the real systemd as the init of private namespaces
# (test/helpers/systemd-box.ts); nothing starts it on the host.
pkgs+=(systemd)
# A machine with a Node.js distribution of its own (nodesource, nvm) keeps it:
# Debian's npm would conflict with nodesource's nodejs, which bundles npm.
if ! command -v npm >/dev/null 2>&1; then pkgs+=(nodejs npm); fi
if [ "${1:-}" = "--dev" ]; then
  pkgs+=(git debootstrap libseccomp-dev)
  if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then pkgs+=(golang-go); fi
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing packages ${missing[*]}; run as root" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # apt's chatter (debconf notices on a bare machine) only when it fails.
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    echo "install-deps: apt-get failed installing ${missing[*]}" >&2
    exit 1
  fi
fi
