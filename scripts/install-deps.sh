#!/usr/bin/env bash
# Installs what klet and its tests need on a Debian/Ubuntu machine (as root):
# the container runtime (containerd with its CRI plugin, runc, the CNI
# plugins), busybox-static for locally built images, etcd-server (the real etcd
# of the control-plane example and tests), and tools the tests and
# benchmarks use. Only packages that are missing are installed.
set -euo pipefail
pkgs=(containerd runc containernetworking-plugins busybox-static etcd-server iptables iproute2 util-linux hyperfine protobuf-compiler time)
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
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
