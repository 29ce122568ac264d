#!/usr/bin/env bash
# The README's commands on a bare Debian 12, as root: a clean bookworm root
# filesystem (debootstrap, minbase: no Node.js, no Go, no containerd), the
# checkout copied in, /proc /sys /dev bind-mounted, run chrooted in a network
# namespace of its own (so its klet0 bridge, iptables rules and pod IPs never
# meet the host's) that reaches the package registries through NAT.
#
#   scripts/fresh-machine-test.sh           ./scripts/demo.sh, then checks that
#                                           the example pods ran (and that
#                                           /usr/local/bin/klet works)
#   scripts/fresh-machine-test.sh --suite   also ./scripts/test.sh (whole suite;
#                                           not green in the chroot yet: three
#                                           tests that read what a container
#                                           wrote through a bind-mounted
#                                           volume see nothing there)
#
# The finished debootstrap is cached as a tarball in $KLET_CI_CACHE
# (default /var/cache/klet-ci), so reruns on one machine skip debootstrap;
# the packages and npm downloads are cached there too (not what they install).
# Whatever happens, the trap stops every process whose root is the chroot
# (containerd and its shims included), unmounts everything under it, and
# removes the network namespace, the veth pair, the NAT rule and the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
suite=0
[ "${1:-}" = "--suite" ] && suite=1

[ "$(id -u)" = 0 ] || { echo "fresh-machine-test: run as root" >&2; exit 1; }
for tool in debootstrap ip iptables nsenter git; do
  command -v "$tool" >/dev/null 2>&1 || { echo "fresh-machine-test: needs $tool (apt-get install debootstrap iproute2 iptables util-linux git)" >&2; exit 1; }
done

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

cleanup() {
  local rc=$?
  set +e
  # Every process running inside the chroot: containerd, shims, pods, klet.
  for _ in 1 2 3; do
    local pids=()
    for p in /proc/[0-9]*; do
      case "$(readlink "$p/root" 2>/dev/null)" in "$rootfs" | "$rootfs"/*) pids+=("${p#/proc/}") ;; esac
    done
    [ "${#pids[@]}" -eq 0 ] && break
    kill -9 "${pids[@]}" 2>/dev/null
    sleep 1
  done
  # Mounts under the tree, deepest first (containerd's overlays and shm included).
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
# ca-certificates) and NODE_EXTRA_CA_CERTS (passed on by in_chroot).
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$rootfs/usr/local/share/ca-certificates"
  cp -r /usr/local/share/ca-certificates/. "$rootfs/usr/local/share/ca-certificates/"
fi

# 3. The root a mount point of its own (runc remounts the container's "/"
# and fails with EINVAL when it is a plain directory, as in a bare chroot),
# /proc, /sys (with the cgroup tree runc needs), /dev.
mount --bind "$rootfs" "$rootfs"
mount --make-private "$rootfs"
mount -t proc proc "$rootfs/proc"
mount --rbind /sys "$rootfs/sys" && mount --make-rslave "$rootfs/sys"
mount --rbind /dev "$rootfs/dev" && mount --make-rslave "$rootfs/dev"
mount -t tmpfs tmpfs "$rootfs/run"
# Downloads only (the .debs apt fetches, npm's cache) are kept across runs in
# the cache dir: every run still installs everything from scratch.
mkdir -p "$cache/apt-archives/partial" "$cache/npm" "$rootfs/root/.npm"
mount --bind "$cache/apt-archives" "$rootfs/var/cache/apt/archives"
mount --bind "$cache/npm" "$rootfs/root/.npm"

# 4. A network namespace with a route out through NAT.
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

# In the chroot, as a login shell of root would be: a bare PATH, no Node.
# nsenter joins only the network namespace (`ip netns exec` would also give
# each call a mount namespace of its own, hiding containerd's mounts from
# the next call).
in_chroot() {
  nsenter --net="/run/netns/$netns" chroot "$rootfs" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    ${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS="$NODE_EXTRA_CA_CERTS"} \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$1"
}

# 5. The README's first command, timed; then what a user checks afterwards.
echo "--- ./scripts/demo.sh on a bare Debian 12"
start=$(date +%s)
in_chroot 'cd /root/klet && ./scripts/demo.sh'
echo "--- demo.sh took $(($(date +%s) - start)) s"
echo "--- again: idempotent, quiet"
again="$(in_chroot 'cd /root/klet && ./scripts/demo.sh' 2>&1 >/dev/null)"
if printf '%s\n' "$again" | grep -E '^(install-deps|bootstrap|setup):|npm (warn|WARN)' >&2; then
  echo "fresh-machine-test: a second ./scripts/demo.sh reinstalled or warned (above)" >&2
  exit 1
fi
echo "--- klet from /usr/local/bin, without sourcing anything"
in_chroot 'set -e; command -v klet; klet --version; klet status'
pods="$(in_chroot 'klet status -o json' | in_chroot '/root/klet/.toolchain/node_modules/.bin/node -e "
  const l = JSON.parse(require(\"fs\").readFileSync(0, \"utf8\"));
  const items = l.items ?? l.pods ?? [];
  const ok = items.filter((p) => [\"Running\", \"Succeeded\"].includes(p.status?.phase));
  console.log(ok.length + \"/\" + items.length);
"')"
echo "--- pods running or succeeded: $pods"
[ "$pods" = "4/4" ] || { echo "fresh-machine-test: expected the 4 example pods, got $pods" >&2; exit 1; }

if [ "$suite" = 1 ]; then
  echo "--- ./scripts/test.sh on the same machine"
  in_chroot 'cd /root/klet && ./scripts/test.sh'
fi
echo "--- fresh-machine-test: OK"
