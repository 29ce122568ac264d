# Shared part of the scripts that compare klet with the real kubelet
# (standalone), one after the other on one private klet-managed containerd
# (scripts/compare-*.sh). Source it at the top of such a script, after
# `set -euo pipefail`:
#
#   . "$(dirname "$0")/compare-lib.sh" NAME "${1:-}"
#
# It starts the private runtime (its output in $OUT/runtime-start.txt) and
# installs an EXIT trap that stops the kubelet and klet sync still running,
# deletes klet's pods, stops the runtime and removes its root dir (never
# through a live mount). Needs root, a built klet (npm run build), Node 24 on
# PATH and the kubelet built by scripts/build-k8s.sh. Never use it on a
# runtime anything else uses: the kubelet removes the pods it does not know.
#
# Variables it sets (the caller reads them, never changes them):
#   KUBELET  the kubelet (env KUBELET; default /var/cache/klet-k8s/v1.34.4/kubelet)
#   KLET     this checkout's klet: node <checkout>/bin/run.js
#   OUT      where results go: the second argument, or a new /tmp/klet-compare-NAME-XXXXXX
#   RT, EP   the runtime's root dir and CRI endpoint (unix://$RT/containerd.sock)
#   NODE     the node name of both agents (cmpnode)
#   COMMON   klet's runtime flags: (--root-dir RT --container-runtime-endpoint EP --node-name NODE)
#   BB       the busybox image the runtime holds
#   RO       the kubelet's read-only port on loopback (RO+1: its port, RO+2: healthz)
#
# Functions:
#   kubelet_config STATIC_POD_PATH DIR [YAML]
#       write DIR/config.yaml: a standalone kubelet on loopback (no auth, no
#       cgroups per QoS, no eviction worth the name) on EP, pod logs in
#       DIR/pod-logs; YAML (more fields, one a line) is added at the end.
#   start_kubelet DIR   run the kubelet on DIR/config.yaml (root dir DIR/root,
#                       log DIR/kubelet.log, --v=3: its events are in the log)
#                       and wait until it answers on RO; exits 1 if it does not.
#   stop_kubelet        stop it and unmount the root dir it bind-mounts.
#   start_sync LOG ARGS...  run `klet sync ARGS... COMMON` in the background, output to LOG.
#   stop_sync           SIGTERM it and wait.
# shellcheck shell=bash

KUBELET=${KUBELET:-/var/cache/klet-k8s/v1.34.4/kubelet}
KLET="node $(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin/run.js"
OUT=${2:-$(mktemp -d "/tmp/klet-compare-$1-XXXXXX")}
mkdir -p "$OUT"
RT=$(mktemp -d /tmp/klet-compare-rt-XXXXXX)
EP="unix://$RT/containerd.sock"
NODE=cmpnode
COMMON=(--root-dir "$RT" --container-runtime-endpoint "$EP" --node-name "$NODE")
BB=localhost/klet/busybox:1.36
RO=$((21000 + RANDOM % 2000))
KPID=''
KROOT=''
SPID=''

compare_cleanup() {
  set +e # clean up as much as can be, whatever fails
  [ -n "$KPID" ] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
  [ -n "$KROOT" ] && umount "$KROOT" 2>/dev/null
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  $KLET delete --all "${COMMON[@]}" >/dev/null 2>&1 || true
  $KLET runtime stop "${COMMON[@]}" >/dev/null 2>&1 || true
  # Never rm -rf through a live mount.
  if grep -q " $RT/" /proc/mounts; then echo "mounts left under $RT: not removed" >&2; else rm -rf "$RT"; fi
}
trap compare_cleanup EXIT

kubelet_config() { # STATIC_POD_PATH DIR [YAML]
  mkdir -p "$2/root" "$2/pod-logs"
  cat >"$2/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: $1
fileCheckFrequency: 1s
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
address: 127.0.0.1
readOnlyPort: $RO
port: $((RO + 1))
healthzBindAddress: 127.0.0.1
healthzPort: $((RO + 2))
containerRuntimeEndpoint: $EP
podLogsDir: $2/pod-logs
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
${3:-}
EOF
}

start_kubelet() { # DIR
  KROOT="$1/root"
  "$KUBELET" --config "$1/config.yaml" --root-dir "$1/root" --hostname-override "$NODE" --v=3 >"$1/kubelet.log" 2>&1 &
  KPID=$!
  for _ in $(seq 60); do curl -sf "http://127.0.0.1:$RO/healthz" >/dev/null && return; sleep 0.5; done
  echo "kubelet did not answer on :$RO" >&2
  tail -20 "$1/kubelet.log" >&2
  exit 1
}

# The kubelet bind-mounts its root dir onto itself: unmount it once it has stopped.
stop_kubelet() { kill "$KPID"; wait "$KPID" || true; KPID=''; umount "$KROOT" 2>/dev/null || true; KROOT=''; }

start_sync() { # LOG ARGS...
  local log="$1"
  shift
  $KLET sync "$@" "${COMMON[@]}" >"$log" 2>&1 &
  SPID=$!
}

stop_sync() { kill "$SPID"; wait "$SPID" || true; SPID=''; }

$KLET runtime start "${COMMON[@]}" >"$OUT/runtime-start.txt"
