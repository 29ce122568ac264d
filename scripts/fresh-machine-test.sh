#!/usr/bin/env bash
# The README's commands on a bare Debian 12, as root: a clean bookworm root
# filesystem (debootstrap, minbase: no Node.js, no Go, no containerd), the
# checkout copied in, run as a machine of its own: a mount namespace whose
# root IS that filesystem (pivot_root, not chroot), with /proc, a /sys of its
# own (and the host's cgroup tree), /dev, a tmpfs /run and an /etc/machine-id,
# in a network namespace of its own (so its klet0 bridge, iptables rules and
# pod IPs never meet the host's) that reaches the package registries through NAT.
#
# Why not a plain chroot: runc enters a container's mount namespace with
# setns(2) for every exec (CRI ExecSync, exec probes, preStop hooks), and
# setns puts the process at the root of that namespace. In a chroot that is
# the host's "/", not the container's: `cat /proc/1/cmdline` and `ls /` in a
# "container" showed the host's. A host sysfs also lists the host's network
# devices, not those of the namespace klet's bridge and veths live in.
#
#   scripts/fresh-machine-test.sh           ./scripts/demo.sh, then checks that
#                                           the example pods ran (and that
#                                           /usr/local/bin/klet works)
#   scripts/fresh-machine-test.sh --suite   also ./scripts/test.sh (whole suite,
#                                           cluster tests included: needs the
#                                           kube-apiserver, kubelet and kubectl
#                                           of scripts/build-k8s.sh in
#                                           $KLET_K8S_CACHE, default
#                                           /var/cache/klet-k8s, which is
#                                           mounted read-only into the machine)
#
# The finished debootstrap is cached as a tarball in $KLET_CI_CACHE
# (default /var/cache/klet-ci), so reruns on one machine skip debootstrap;
# the packages and npm downloads are cached there too (not what they install).
# Whatever happens, the trap kills every process in the machine's mount
# namespace and their descendants (containerd, shims, containers), which
# drops the namespace and every mount in it, and removes the network
# namespace, the veth pair, the NAT rule and the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
suite=0
[ "${1:-}" = "--suite" ] && suite=1

[ "$(id -u)" = 0 ] || { echo "fresh-machine-test: run as root" >&2; exit 1; }
for tool in debootstrap ip iptables nsenter unshare git; do
  command -v "$tool" >/dev/null 2>&1 || { echo "fresh-machine-test: needs $tool (apt-get install debootstrap iproute2 iptables util-linux git)" >&2; exit 1; }
done
k8s_cache="${KLET_K8S_CACHE:-/var/cache/klet-k8s}"
if [ "$suite" = 1 ] && ! compgen -G "$k8s_cache/*/kube-apiserver" >/dev/null; then
  echo "fresh-machine-test: --suite runs the cluster tests too: build their binaries first (scripts/build-k8s.sh; looked in $k8s_cache)" >&2
  exit 1
fi

cache="${KLET_CI_CACHE:-/var/cache/klet-ci}"
tarball="$cache/debootstrap-bookworm-minbase-amd64.tar.gz"
id="kfm$$"
work="$(mktemp -d /var/tmp/klet-fresh-machine.XXXXXX)"
rootfs="$work/rootfs"
netns="$id"
subnet_host="10.231.$(($$ % 250)).1"
subnet_ns="10.231.$(($$ % 250)).2"
nat_comment="klet fresh-machine-test $id"
forward_was="$(sysctl -n net.ipv4.ip_forward)"

# The Debian mirror: $KLET_DEBIAN_MIRROR, else the one this machine's apt
# uses (deb822 or one-line format), else deb.debian.org (an Ubuntu host).
mirror() {
  local m="${KLET_DEBIAN_MIRROR:-}"
  if [ -n "$m" ]; then echo "$m"; return; fi
  m="$(grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -i '/debian' | grep -v security | head -n1 || true)"
  [ -n "$m" ] || m="$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -E ' (bookworm|stable) ' | awk '{print $2}' | grep -i '/debian' | grep -v security | head -n1 || true)"
  echo "${m:-http://deb.debian.org/debian}"
}

holder=""
holder_ns=""
# Pids in the machine's mount namespace, and all their descendants (the
# containers, each in a mount namespace of its own, are children of shims).
machine_pids() {
  [ -n "$holder_ns" ] || return 0
  local p ns pp
  local -A parent=()
  local -a roots=() out=()
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    ns="$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" || continue
    pp="$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null)" || continue
    parent[$p]="$pp"
    [ "$ns" = "$holder_ns" ] && roots+=("$p")
  done
  local -A seen=()
  for p in "${roots[@]}"; do seen[$p]=1; done
  local grew=1
  while [ "$grew" = 1 ]; do
    grew=0
    for p in "${!parent[@]}"; do
      if [ -z "${seen[$p]:-}" ] && [ -n "${seen[${parent[$p]}]:-}" ]; then seen[$p]=1; grew=1; fi
    done
  done
  out=("${!seen[@]}")
  [ "${#out[@]}" -eq 0 ] || echo "${out[@]}"
}

cleanup() {
  local rc=$?
  set +e
  # Every process of the machine: containerd, shims, pods, klet, the holder.
  # With the last of them the mount namespace and all its mounts go.
  for _ in 1 2 3 4 5; do
    local pids
    pids="$(machine_pids)"
    [ -z "$pids" ] && break
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null
    sleep 1
  done
  # Nothing should be mounted under the tree in this namespace; never rm -rf through a mount.
  if [ -d "$rootfs" ]; then
    awk -v r="$rootfs" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
      umount -l "$m" 2>/dev/null
    done
  fi
  ip netns del "$netns" 2>/dev/null
  ip link del "${id}h" 2>/dev/null
  iptables -t nat -D POSTROUTING -s "$subnet_ns/32" -m comment --comment "$nat_comment" -j MASQUERADE 2>/dev/null
  iptables -D FORWARD -i "${id}h" -m comment --comment "$nat_comment" -j ACCEPT 2>/dev/null
  iptables -D FORWARD -o "${id}h" -m comment --comment "$nat_comment" -j ACCEPT 2>/dev/null
  [ "$forward_was" = 0 ] && sysctl -qw net.ipv4.ip_forward=0
  rm -rf --one-file-system "$work"
  if [ "$rc" -ne 0 ]; then echo "fresh-machine-test: FAILED (exit $rc)" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. A clean bookworm root filesystem (cached).
mkdir -p "$rootfs" "$cache"
if [ ! -s "$tarball" ]; then
  echo "--- debootstrap bookworm from $(mirror) (cached afterwards in $tarball)"
  debootstrap --variant=minbase bookworm "$rootfs" "$(mirror)" >"$work/debootstrap.log" 2>&1 || {
    tail -n 20 "$work/debootstrap.log" >&2
    exit 1
  }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -czf "$tarball.tmp.$$" . && mv -f "$tarball.tmp.$$" "$tarball"
else
  echo "--- bookworm root filesystem from $tarball"
  tar -C "$rootfs" -xzf "$tarball"
fi
for tool in node npm go containerd; do
  if chroot "$rootfs" /bin/sh -c "command -v $tool" >/dev/null 2>&1; then
    echo "fresh-machine-test: the fresh root filesystem already has $tool" >&2
    exit 1
  fi
done

# 2. The checkout: tracked and new files, not node_modules, dist or .toolchain.
mkdir -p "$rootfs/root/klet"
git -C "$repo" ls-files -z --cached --others --exclude-standard | (cd "$repo" && xargs -0 tar -cf - --no-recursion --ignore-failed-read 2>/dev/null) | tar -C "$rootfs/root/klet" -xf -
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
# This machine's own network trust (e.g. a TLS-intercepting proxy's CA), as
# any machine on this network would have it: the local CA certificates
# (update-ca-certificates adds them when install-deps installs
# ca-certificates) and NODE_EXTRA_CA_CERTS (passed on by in_machine).
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$rootfs/usr/local/share/ca-certificates"
  cp -r /usr/local/share/ca-certificates/. "$rootfs/usr/local/share/ca-certificates/"
fi

# 3. A network namespace with a route out through NAT.
ip netns add "$netns"
ip link add "${id}h" type veth peer name "${id}n"
ip link set "${id}n" netns "$netns"
ip addr add "$subnet_host/30" dev "${id}h"
ip link set "${id}h" up
ip -n "$netns" addr add "$subnet_ns/30" dev "${id}n"
ip -n "$netns" link set "${id}n" up
ip -n "$netns" link set lo up
ip -n "$netns" route add default via "$subnet_host"
iptables -t nat -A POSTROUTING -s "$subnet_ns/32" -m comment --comment "$nat_comment" -j MASQUERADE
iptables -I FORWARD -i "${id}h" -m comment --comment "$nat_comment" -j ACCEPT
iptables -I FORWARD -o "${id}h" -m comment --comment "$nat_comment" -j ACCEPT
[ "$forward_was" = 1 ] || sysctl -qw net.ipv4.ip_forward=1

# 4. The machine: a holder process in that network namespace and a mount
# namespace of its own, whose root becomes the root filesystem by
# pivot_root, with what a booted Debian has mounted: /proc, a sysfs of this
# network namespace (with the host's cgroup tree, which runc needs), /dev,
# a tmpfs on /run, "/" shared (as systemd makes it; HostToContainer and
# Bidirectional volumes need it), and an /etc/machine-id (systemd writes one
# at first boot; minbase has no systemd). Downloads only (the .debs apt
# fetches, npm's cache) are kept across runs in the cache dir: every run
# still installs everything from scratch. All in the namespace: nothing is
# mounted on the host.
tr -d - </proc/sys/kernel/random/uuid >"$rootfs/etc/machine-id"
mkdir -p "$cache/apt-archives/partial" "$cache/npm" "$rootfs/root/.npm" "$rootfs/.oldroot"
[ "$suite" = 0 ] || mkdir -p "$rootfs/var/cache/klet-k8s"
nsenter --net="/run/netns/$netns" unshare --mount --propagation private /bin/sh -ec '
  r="$1" cache="$2" k8s="$3"
  mount --bind "$r" "$r"
  mount -t proc proc "$r/proc"
  mount -t sysfs sysfs "$r/sys"
  mount --rbind /sys/fs/cgroup "$r/sys/fs/cgroup"
  mount --rbind /dev "$r/dev"
  mount -t tmpfs -o mode=755 tmpfs "$r/run"
  mount --bind "$cache/apt-archives" "$r/var/cache/apt/archives"
  mount --bind "$cache/npm" "$r/root/.npm"
  if [ -n "$k8s" ]; then mount --bind "$k8s" "$r/var/cache/klet-k8s" && mount -o remount,bind,ro "$r/var/cache/klet-k8s"; fi
  cd "$r"
  pivot_root . .oldroot
  cd /
  umount -l /.oldroot
  rmdir /.oldroot
  mount --make-rshared /
  touch /run/.klet-fresh-machine-ready
  exec sleep infinity
' fresh-machine "$rootfs" "$cache" "$([ "$suite" = 1 ] && echo "$k8s_cache")" &
holder=$!
disown "$holder" # the trap kills it: no "Killed" job report
for _ in $(seq 100); do
  [ -e "/proc/$holder/root/run/.klet-fresh-machine-ready" ] && break
  kill -0 "$holder" 2>/dev/null || { echo "fresh-machine-test: setting up the machine's mounts failed" >&2; exit 1; }
  sleep 0.1
done
[ -e "/proc/$holder/root/run/.klet-fresh-machine-ready" ] || { echo "fresh-machine-test: the machine's mounts took over 10 s" >&2; exit 1; }
holder_ns="$(readlink "/proc/$holder/ns/mnt")"

# In the machine, as a login shell of root would be: a bare PATH, no Node.
# nsenter joins the holder's namespaces (mount and network), so containerd
# started by one call stays visible to the next.
in_machine() {
  nsenter --target "$holder" --mount --net /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS="$NODE_EXTRA_CA_CERTS"} \
    ${KLET_CLUSTER_TESTS:+KLET_CLUSTER_TESTS="$KLET_CLUSTER_TESTS"} \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$1"
}

# 5. The README's first command, timed; then what a user checks afterwards.
echo "--- ./scripts/demo.sh on a bare Debian 12"
start=$(date +%s)
in_machine 'cd /root/klet && ./scripts/demo.sh --cgroups-per-qos=false --enforce-node-allocatable=none'
echo "--- demo.sh took $(($(date +%s) - start)) s"
echo "--- again: idempotent, quiet"
again="$(in_machine 'cd /root/klet && ./scripts/demo.sh --cgroups-per-qos=false --enforce-node-allocatable=none' 2>&1 >/dev/null)"
if printf '%s\n' "$again" | grep -E '^(install-deps|bootstrap|setup):|npm (warn|WARN)' >&2; then
  echo "fresh-machine-test: a second ./scripts/demo.sh reinstalled or warned (above)" >&2
  exit 1
fi
echo "--- klet from /usr/local/bin, without sourcing anything"
in_machine 'set -e; command -v klet; klet --version; klet status'
pods="$(in_machine 'klet status -o json' | in_machine '/root/klet/.toolchain/node_modules/.bin/node -e "
  const l = JSON.parse(require(\"fs\").readFileSync(0, \"utf8\"));
  const items = l.items ?? l.pods ?? [];
  const ok = items.filter((p) => [\"Running\", \"Succeeded\"].includes(p.status?.phase));
  console.log(ok.length + \"/\" + items.length);
"')"
echo "--- pods running or succeeded: $pods"
[ "$pods" = "4/4" ] || { echo "fresh-machine-test: expected the 4 example pods, got $pods" >&2; exit 1; }

echo "--- the README's tour: a pod's logs, the dashboard of a running klet sync, klet explain of a crash-looping pod"
# The machine shares the host's cgroup tree (rbind): its klet sync, runonce (demo.sh) and run-pod keep the pods in the runtime's
# cgroups, so nothing is made in the host's /kubepods.
in_machine 'set -e; cd /root/klet
klet logs job-$(hostname) | grep -qx done
klet sync --manifest-dir examples/ --cgroups-per-qos=false --enforce-node-allocatable=none >/tmp/klet-sync.log 2>&1 &
sync=$!
for _ in $(seq 60); do [ -S /var/lib/klet/klet.sock ] && break; sleep 1; done
sleep 3
klet dashboard | grep -q "web-"
kill $sync; wait $sync || true
klet run-pod examples/broken/crash.yaml --wait running --cgroups-per-qos=false --enforce-node-allocatable=none || true
klet explain crash-$(hostname) | tee /tmp/klet-explain.txt
grep -Eq "CrashLoopBackOff|Error" /tmp/klet-explain.txt
klet delete crash-$(hostname)'

if [ "$suite" = 1 ]; then
  echo "--- ./scripts/test.sh on the same machine (cluster tests required)"
  KLET_CLUSTER_TESTS=required in_machine 'cd /root/klet && ./scripts/test.sh'
fi
echo "--- fresh-machine-test: OK"
