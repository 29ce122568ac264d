# Shared by scripts/compare-*.sh (sourced, not run): a private klet-managed
# containerd, the real kubelet (standalone, staticPodPath) on it, and the
# cleanup of both. The sourcing script sets OUT and may set KUBELET_EXTRA
# (KubeletConfiguration lines) and KUBELET_CGROUPS (the cgroup lines; default
# flat: cgroupsPerQOS false, no enforcement) before calling kubelet_config.
#
# Provides: KUBELET, HERE, KLET, RT, EP, NODE, COMMON, BB, RO, KPID, KROOT,
# SPID, KUBELET_ARGS, the EXIT trap, and kubelet_config, run_kubelet, stop_kubelet,
# kpods, empty_kubelet. Needs root, a built klet and Node 24 on PATH.
KUBELET=${KUBELET:-/var/cache/klet-k8s/v1.34.4/kubelet}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KLET="node $HERE/bin/run.js"
RT=$(mktemp -d /tmp/klet-compare-rt-XXXXXX)
EP="unix://$RT/containerd.sock"
NODE=cmpnode
COMMON=(--root-dir "$RT" --container-runtime-endpoint "$EP" --node-name "$NODE")
BB=localhost/klet/busybox:1.36
RO=$((21000 + RANDOM % 2000))
KPID=''
KROOT=''
SPID=''
KUBELET_CGROUPS=${KUBELET_CGROUPS:-$'cgroupsPerQOS: false\nenforceNodeAllocatable: []'}
# Hooks of the sourcing script, run last in cleanup (e.g. removing its cgroups).
compare_cleanup_hook() { :; }
compare_cleanup() {
  set +e # clean up as much as can be, whatever fails
  [ -n "$KPID" ] && kill "$KPID" 2>/dev/null && wait "$KPID" 2>/dev/null
  [ -n "$KROOT" ] && umount "$KROOT" 2>/dev/null
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  $KLET delete --all "${COMMON[@]}" >/dev/null 2>&1 || true
  $KLET runtime stop "${COMMON[@]}" >/dev/null 2>&1 || true
  # Never rm -rf through a live mount.
  if grep -q " $RT/" /proc/mounts; then echo "mounts left under $RT: not removed" >&2; else rm -rf "$RT"; fi
  compare_cleanup_hook
}
trap compare_cleanup EXIT

# The kubelet's configuration for staticPodPath $1 in dir $2 (writes $2/config.yaml).
kubelet_config() {
  local d="$2"
  mkdir -p "$d/root" "$d/pod-logs"
  cat >"$d/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: $1
fileCheckFrequency: 1s
cgroupDriver: cgroupfs
$KUBELET_CGROUPS
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
podLogsDir: $d/pod-logs
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
${KUBELET_EXTRA:-}
EOF
  grep -q '^resolvConf:' "$d/config.yaml" || echo 'resolvConf: /etc/resolv.conf' >>"$d/config.yaml"
}
# Start the kubelet on staticPodPath $1, its files in $OUT/kubelet-$2, with
# KUBELET_ARGS (more flags, e.g. --kubeconfig); wait for its healthz.
KUBELET_ARGS=()
run_kubelet() {
  local d="$OUT/kubelet-$2"
  kubelet_config "$1" "$d"
  KROOT="$d/root"
  # --v=3: the standalone kubelet's events go to its log (StartStructuredLogging(3)).
  "$KUBELET" --config "$d/config.yaml" --root-dir "$d/root" --hostname-override "$NODE" --v=3 "${KUBELET_ARGS[@]}" >"$d/kubelet.log" 2>&1 &
  KPID=$!
  for _ in $(seq 60); do curl -sf "http://127.0.0.1:$RO/healthz" >/dev/null && return; sleep 0.5; done
  echo "kubelet did not answer on :$RO" >&2; tail -20 "$d/kubelet.log" >&2; exit 1
}
# The kubelet's /pods (read-only port) into $1.
kpods() { curl -sf "http://127.0.0.1:$RO/pods" >"$1"; }
# Empty the static pod path $1: the kubelet stops and removes every pod of its own.
empty_kubelet() {
  rm -f "$1"/*.yaml
  for _ in $(seq 60); do [ "$(curl -sf "http://127.0.0.1:$RO/pods" | jq '.items | length')" = 0 ] && break; sleep 1; done
  sleep 3
}
# The kubelet bind-mounts its root dir onto itself: unmount it once it has stopped.
stop_kubelet() { kill "$KPID"; wait "$KPID" || true; KPID=''; umount "$KROOT" 2>/dev/null || true; KROOT=''; }
