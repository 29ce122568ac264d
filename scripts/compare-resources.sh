#!/usr/bin/env bash
# Compare klet with the real kubelet (standalone, cgroupsPerQOS on) on the
# Kubernetes documentation's resource examples: "Configure Quality of Service
# for Pods" (qos-pod.yaml, -2, -3, -4), "Assign Memory Resources to Containers
# and Pods" (memory-request-limit.yaml, -2 over its limit, -3 over the node),
# "Assign CPU Resources" (cpu-request-limit.yaml, -2 over the node) and
# "Assign Pod-level CPU and memory resources" (PodLevelResources, beta and on
# by default in 1.34). The docs' images (nginx, redis, polinux/stress,
# vish/stress, fedora) are not available offline: every container runs the
# locally built busybox with an equivalent command (sleep for a server; a
# `dd` that holds N MiB of /dev/zero for `stress --vm-bytes N`; busy `yes`
# loops for `stress -cpus N`).
#
# Four groups (qos, memory, cpu, podlevel), each run on the kubelet, then on
# klet sync, one agent at a time on one private containerd, both with
# a private --cgroup-root of its own (made here in every hierarchy, removed
# after; two roots, so that neither agent finds the other's kubepods) and --kube-reserved cpu=100m,memory=256Mi
# --system-reserved memory=256Mi. For each: the pods' status as a user sees
# it (phase, reason, qosClass, restarts, last state), the events, and the
# cgroup values (cpu.shares, CFS quota, memory limit, pids.max, the
# containers' oom_score_adj) of kubepods, the QoS and pod cgroups and the
# containers (pod UIDs and container IDs replaced by names), and what is left
# under kubepods once the pods are gone. Each agent's files are diffed.
#
#   scripts/compare-resources.sh [OUT]
#
# Needs root, a built klet (npm run build), Node 24 on PATH, jq and the
# kubelet built by scripts/build-k8s.sh. Never run it on a runtime anything
# else uses: the kubelet removes the pods it does not know.
set -euo pipefail
OUT=${1:-$(mktemp -d /tmp/klet-compare-res-XXXXXX)}
mkdir -p "$OUT"
CGROOT=/klet-compare-$$-$RANDOM
ROOTS=("$CGROOT-kubelet" "$CGROOT-klet")
KUBELET_CGROUPS="cgroupsPerQOS: true
cgroupRoot: ${ROOTS[0]}
enforceNodeAllocatable: [pods]
kubeReserved: {cpu: 100m, memory: 256Mi}
systemReserved: {memory: 256Mi}"
# shellcheck source=scripts/lib/compare-common.sh
. "$(dirname "$0")/lib/compare-common.sh"
WAIT=${WAIT:-40}
COMPARE_GROUPS=${COMPARE_GROUPS:-qos memory cpu podlevel resize}
RWAIT=${RWAIT:-15}
CP=''

# ---- the private cgroup root, in every hierarchy ------------------------------
hierarchies() { for h in /sys/fs/cgroup/*/; do [ -L "${h%/}" ] || echo "${h%/}"; done; }
remove_cgroots() {
  local h r
  for r in "${ROOTS[@]}"; do for h in $(hierarchies); do [ -d "$h$r" ] && find "$h$r" -depth -type d -exec rmdir {} \; ; done; done
  true
}
compare_cleanup_hook() {
  [ -n "$CP" ] && kill "$CP" 2>/dev/null && wait "$CP" 2>/dev/null
  remove_cgroots
}
for r in "${ROOTS[@]}"; do
  for h in $(hierarchies); do
    mkdir "$h$r"
    if [ -f "$h$r/cpuset.cpus" ]; then cat "$h/cpuset.cpus" >"$h$r/cpuset.cpus"; cat "$h/cpuset.mems" >"$h$r/cpuset.mems"; fi
  done
done

$KLET runtime start "${COMMON[@]}" >"$OUT/runtime-start.txt"

# ---- the manifests (the docs', busybox commands for their images) ------------
M="$OUT/manifests"
mkdir -p "$M"/{qos,memory,cpu,podlevel,resize}
SERVER='["sleep", "3600"]'
# stress --vm 1 --vm-bytes N --vm-hang 1: dd reads N of zeros into one buffer and blocks for ever writing it to a FIFO no one reads.
hold() { echo "[\"sh\", \"-c\", \"mkfifo /tmp/hold; exec dd if=/dev/zero bs=$1 count=1 1<>/tmp/hold\"]"; }
burn() { echo '["sh", "-c", "yes >/dev/null & exec yes >/dev/null"]'; }             # stress -cpus 2
pod() { # group file name namespace spec
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\nspec:\n  terminationGracePeriodSeconds: 1\n%s\n' "$3" "$4" "$5" >"$M/$1/$2.yaml"
}
pod qos qos-pod qos-demo qos-example "  containers:
    - {name: qos-demo-ctr, image: $BB, command: $SERVER, resources: {limits: {memory: 200Mi, cpu: 700m}, requests: {memory: 200Mi, cpu: 700m}}}"
pod qos qos-pod-2 qos-demo-2 qos-example "  containers:
    - {name: qos-demo-2-ctr, image: $BB, command: $SERVER, resources: {limits: {memory: 200Mi}, requests: {memory: 100Mi}}}"
pod qos qos-pod-3 qos-demo-3 qos-example "  containers:
    - {name: qos-demo-3-ctr, image: $BB, command: $SERVER}"
pod qos qos-pod-4 qos-demo-4 qos-example "  containers:
    - {name: qos-demo-4-ctr-1, image: $BB, command: $SERVER, resources: {requests: {memory: 200Mi}}}
    - {name: qos-demo-4-ctr-2, image: $BB, command: $SERVER}"
pod memory memory-request-limit memory-demo mem-example "  containers:
    - {name: memory-demo-ctr, image: $BB, command: $(hold 150M), resources: {requests: {memory: 100Mi}, limits: {memory: 200Mi}}}"
pod memory memory-request-limit-2 memory-demo-2 mem-example "  containers:
    - {name: memory-demo-2-ctr, image: $BB, command: $(hold 250M), resources: {requests: {memory: 50Mi}, limits: {memory: 100Mi}}}"
pod memory memory-request-limit-3 memory-demo-3 mem-example "  containers:
    - {name: memory-demo-3-ctr, image: $BB, command: $(hold 150M), resources: {requests: {memory: 1000Gi}, limits: {memory: 1000Gi}}}"
pod cpu cpu-request-limit cpu-demo cpu-example "  containers:
    - {name: cpu-demo-ctr, image: $BB, command: $(burn), resources: {limits: {cpu: '1'}, requests: {cpu: '0.5'}}}"
pod cpu cpu-request-limit-2 cpu-demo-2 cpu-example "  containers:
    - {name: cpu-demo-ctr-2, image: $BB, command: $(burn), resources: {limits: {cpu: '100'}, requests: {cpu: '100'}}}"
pod podlevel pod-level-memory-request-limit memory-demo pod-resources-example "  resources: {requests: {memory: 100Mi}, limits: {memory: 200Mi}}
  containers:
    - {name: memory-demo-ctr, image: $BB, command: $(hold 150M)}"
pod podlevel pod-level-cpu-request-limit cpu-demo pod-resources-example "  resources: {limits: {cpu: '1'}, requests: {cpu: '0.5'}}
  containers:
    - {name: cpu-demo-ctr, image: $BB, command: $(burn)}"
pod podlevel pod-level-resources pod-resources-demo pod-resources-example "  resources: {limits: {cpu: '1', memory: 200Mi}, requests: {cpu: '1', memory: 100Mi}}
  containers:
    - {name: pod-resources-demo-ctr-1, image: $BB, command: $SERVER, resources: {limits: {cpu: '0.5', memory: 100Mi}, requests: {cpu: '0.5', memory: 50Mi}}}
    - {name: pod-resources-demo-ctr-2, image: $BB, command: $SERVER}"
# "Resize CPU and Memory Resources assigned to Containers" (pod-resize.yaml):
# a Guaranteed pod whose CPU is resized in place and whose memory restarts it.
# busybox for registry.k8s.io/pause: a sleep that ends on SIGTERM, as pause does;
# nodeName set, as no scheduler runs.
cat >"$M/resize/pod-resize.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata: {name: resize-demo, namespace: qos-example}
spec:
  nodeName: $NODE
  containers:
    - name: pause
      image: $BB
      command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
      resizePolicy:
        - {resourceName: cpu, restartPolicy: NotRequired}
        - {resourceName: memory, restartPolicy: RestartContainer}
      resources:
        limits: {memory: 200Mi, cpu: 700m}
        requests: {memory: 200Mi, cpu: 700m}
EOF
# A Guaranteed pod of 1 CPU beside it (for the deferred resize).
sed -e 's/resize-demo/filler/' -e 's/700m/1/g' -e 's/200Mi/64Mi/g' "$M/resize/pod-resize.yaml" >"$M/resize/filler.yaml"
# The task's steps: resize subresource patches of container "pause", more CPU
# (in place), more memory (a restart), 1000 CPUs (PodResizePending
# Infeasible); then, as its "Pod resize status" section describes, a resize
# that fits the node but not beside another pod (Deferred), and that pod
# deleted (the kubelet retries deferred resizes when a pod is removed).
resize_patch() { kc patch pod -n qos-example resize-demo --subresource resize --patch "{\"spec\":{\"containers\":[{\"name\":\"pause\",\"resources\":$1}]}}" >/dev/null; }
step_cpu() { resize_patch '{"requests":{"cpu":"800m"},"limits":{"cpu":"800m"}}'; }
step_memory() { resize_patch '{"requests":{"memory":"300Mi"},"limits":{"memory":"300Mi"}}'; }
step_infeasible() { resize_patch '{"requests":{"cpu":"1000"},"limits":{"cpu":"1000"}}'; }
step_deferred() {
  kc apply -f "$M/resize/filler.yaml" >/dev/null
  kc wait -n qos-example --for=condition=Ready pod/filler --timeout=90s >/dev/null || true
  resize_patch '{"requests":{"cpu":"1"},"limits":{"cpu":"1"}}'
}
step_filler_deleted() { kc delete pod -n qos-example filler --timeout=90s >/dev/null || true; }
RESIZE_STEPS=(cpu memory infeasible deferred filler-deleted)

# ---- what a user sees ---------------------------------------------------------
# Pods of a PodList (the kubelet's /pods, klet status -o json), sorted, without run-specific fields.
summary() {
  jq -S '[.items[] | {pod: "\(.metadata.namespace)/\(.metadata.name)", phase: .status.phase, reason: .status.reason, message: .status.message,
    qosClass: .status.qosClass, resources: .spec.resources,
    conditions: [.status.conditions[]? | "\(.type)=\(.status)\(if .reason then " " + .reason else "" end)"] | sort,
    containers: [.status.containerStatuses[]? | {name, ready, started, restartCount, state: (.state | keys[0]), stateReason: (.state[] | .reason),
      lastState: (.lastState.terminated | if . then "\(.reason) \(.exitCode)" else null end), resources}] }] | sort_by(.pod)' "$1"
}
# The cgroups under $2/kubepods: path (pod<ns/name>, container names) and values; $1 = the agent's PodList.
dump_cgroups() {
  local root="$2" names cpu=/sys/fs/cgroup/cpu mem=/sys/fs/cgroup/memory pids=/sys/fs/cgroup/pids d rel p
  names=$(jq -r '.items[] | "s|pod\(.metadata.uid)|pod<\(.metadata.namespace)/\(.metadata.name)>|", (.status.containerStatuses[]? | select(.containerID) | "s|\(.containerID | sub("^[a-z]+://"; ""))|<\(.name)>|")' "$1")
  (cd "$mem$root" && find kubepods -type d | sort) | while read -r rel; do
    d="$root/$rel"
    p=$(head -1 "$mem$d/cgroup.procs" 2>/dev/null || true)
    printf '%s shares=%s quota=%s period=%s memory=%s pids=%s oom_score_adj=%s\n' "$rel" \
      "$(cat "$cpu$d/cpu.shares")" "$(cat "$cpu$d/cpu.cfs_quota_us")" "$(cat "$cpu$d/cpu.cfs_period_us")" \
      "$(cat "$mem$d/memory.limit_in_bytes")" "$(cat "$pids$d/pids.max" 2>/dev/null || echo -)" \
      "$( { [ -n "$p" ] && cat "/proc/$p/oom_score_adj"; } 2>/dev/null || echo -)"
  done | sed -E -e "$names" -e 's/[0-9a-f]{64}/<sandbox>/' | sort
}
# The pod cgroups left under root $1, once none is (up to 60 s): how long that took.
leftovers() {
  local i
  for i in $(seq 0 60); do
    [ -z "$(cd "/sys/fs/cgroup/memory$1" && find kubepods -mindepth 1 -type d -name 'pod*')" ] && { echo "pod cgroups removed $((i / 10 * 10))-$((i / 10 * 10 + 10)) s after the pods were gone"; return; }
    sleep 1
  done
  echo "pod cgroups left 60 s after the pods were gone:"; (cd "/sys/fs/cgroup/memory$1" && find kubepods -mindepth 1 -type d -name 'pod*' | sort)
}
# Pod events as "count ns/name type reason: message", counted as the API counts them (the standalone kubelet logs each one).
kevents() { # the kubelet's log
  grep '"Event occurred"' "$1" | grep 'kind="Pod"' | sed -E 's/^.*object="([^"]*)".* type="([^"]*)" reason="([^"]*)" message="(.*)"$/1\t\1 \2 \3: \4/' | sed -e 's/\\"/"/g' | count_events
}
levents() { # klet events -o json
  jq -r '.items[] | select(.involvedObject.kind == "Pod") | "\(.count // 1)\t\(.involvedObject.namespace)/\(.involvedObject.name) \(.type) \(.reason): \(.message)"' "$1" | count_events
}
count_events() { sed -E 's/[0-9a-f]{64}/<id>/g; s/\(([0-9a-f]{32})\)/(<uid>)/g' | awk -F'\t' '{ n[$2] += $1 } END { for (k in n) printf "%7d %s\n", n[k], k }' | sort -k2; }
# Diff each of group $1's files $2… of the two agents.
diff_group() {
  local g=$1 f
  shift
  for f in "$@"; do
    if diff -u "$OUT/kubelet-$g-$f" "$OUT/klet-$g-$f" >"$OUT/diff-$g-$f"; then rm "$OUT/diff-$g-$f"; echo "$g $f: identical"; else echo "$g $f: differences in $OUT/diff-$g-$f"; fi
  done
}

# ---- pod resize: API pods, so a control plane (the cluster tests' etcd + kube-apiserver) --
kc() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }
start_control_plane() {
  mkdir -p "$OUT/control-plane"
  (cd "$HERE" && exec node --import tsx test/helpers/control-plane-main.ts "$OUT/control-plane" "$NODE" qos-example) >"$OUT/control-plane.log" 2>&1 &
  CP=$!
  for _ in $(seq 240); do
    [ -f "$OUT/control-plane/env" ] && break
    kill -0 "$CP" 2>/dev/null || { tail -20 "$OUT/control-plane.log" >&2; exit 1; }
    sleep 0.5
  done
  # shellcheck disable=SC1091
  . "$OUT/control-plane/env"
}
# Agent $1's view of the pod after step $2, its cgroups under root $3 and its events so far, appended to $OUT/$1-resize-*.
resize_record() {
  local f="$OUT/$1-resize" step=$2 uid
  kc get pod -n qos-example resize-demo -o json >"$f-$step-pod.json"
  kc get pods -n qos-example -o json >"$f-$step-pods.json" # every pod's cgroup by name (filler's too)
  { echo "## $step"; jq -S '{generation: .metadata.generation, observedGeneration: .status.observedGeneration, phase: .status.phase,
      qosClass: .status.qosClass, podResources: .status.resources,
      conditions: [.status.conditions[]? | {type, status, reason, message, observedGeneration}] | sort_by(.type),
      containers: [.status.containerStatuses[]? | {name, restartCount, ready, state: (.state | keys[0]),
        lastState: (.lastState.terminated | if . then "\(.reason) \(.exitCode)" else null end), resources, allocatedResources}]}' "$f-$step-pod.json"; } >>"$f-status.txt"
  { echo "## $step"; dump_cgroups "$f-$step-pods.json" "$3"; } >>"$f-cgroups.txt"
  uid=$(jq -r .metadata.uid "$f-$step-pod.json")
  kc get events -n qos-example -o json | jq --arg uid "$uid" '{items: [.items[] | select(.involvedObject.uid == $uid)]}' >"$f-$step-events.json"
  { echo "## $step"; levents "$f-$step-events.json"; } >>"$f-events.txt"
}
# The task on agent $1 (kubelet or klet) joined to the control plane: create the pod, then each step after RWAIT s.
resize_agent() {
  local a=$1 root step
  mkdir -p "$OUT/m-$a-resize"
  if [ "$a" = kubelet ]; then
    root=${ROOTS[0]}
    KUBELET_ARGS=(--kubeconfig "$NODE_KUBECONFIG")
    run_kubelet "$OUT/m-kubelet-resize" resize
    KUBELET_ARGS=()
  else
    root=${ROOTS[1]}
    $KLET sync --kubeconfig "$NODE_KUBECONFIG" --port 0 --manifest-dir "$OUT/m-klet-resize" --cgroup-root "$root" \
      --kube-reserved cpu=100m,memory=256Mi --system-reserved memory=256Mi "${COMMON[@]}" >"$OUT/klet-resize-sync.log" 2>&1 &
    SPID=$!
  fi
  for _ in $(seq 60); do kc get node "$NODE" >/dev/null 2>&1 && break; sleep 1; done
  kc apply -f "$M/resize/pod-resize.yaml" >/dev/null
  kc wait -n qos-example --for=condition=Ready pod/resize-demo --timeout=90s >/dev/null || true
  resize_record "$a" created "$root"
  for step in "${RESIZE_STEPS[@]}"; do
    "step_${step//-/_}"
    sleep "$RWAIT"
    resize_record "$a" "$step" "$root"
  done
  kc delete pod -n qos-example resize-demo --timeout=90s >/dev/null || true
  if [ "$a" = kubelet ]; then
    stop_kubelet
  else
    kill "$SPID"; wait "$SPID" || true; SPID=''
    $KLET delete --all "${COMMON[@]}" >/dev/null 2>&1 || true
  fi
  kc delete node "$NODE" >/dev/null 2>&1 || true
}
compare_resize() {
  start_control_plane
  resize_agent kubelet
  resize_agent klet
  diff_group resize status.txt cgroups.txt events.txt
}

for g in $COMPARE_GROUPS; do
  [ "$g" = resize ] && continue
  # The kubelet.
  MK="$OUT/m-kubelet-$g"
  cp -r "$M/$g" "$MK"
  run_kubelet "$MK" "$g"
  sleep "$WAIT"
  kpods "$OUT/kubelet-$g-pods.json"
  summary "$OUT/kubelet-$g-pods.json" >"$OUT/kubelet-$g-status.json"
  dump_cgroups "$OUT/kubelet-$g-pods.json" "${ROOTS[0]}" >"$OUT/kubelet-$g-cgroups.txt"
  empty_kubelet "$MK"
  leftovers "${ROOTS[0]}" >"$OUT/kubelet-$g-left.txt"
  stop_kubelet
  kevents "$OUT/kubelet-$g/kubelet.log" >"$OUT/kubelet-$g-events.txt"

  # klet sync.
  MS="$OUT/m-klet-$g"
  cp -r "$M/$g" "$MS"
  $KLET sync --manifest-dir "$MS" --file-check-frequency 1s --cgroup-root "${ROOTS[1]}" \
    --kube-reserved cpu=100m,memory=256Mi --system-reserved memory=256Mi "${COMMON[@]}" >"$OUT/klet-$g-sync.log" 2>&1 &
  SPID=$!
  sleep "$WAIT"
  $KLET status -o json "${COMMON[@]}" >"$OUT/klet-$g-pods.json"
  summary "$OUT/klet-$g-pods.json" >"$OUT/klet-$g-status.json"
  dump_cgroups "$OUT/klet-$g-pods.json" "${ROOTS[1]}" >"$OUT/klet-$g-cgroups.txt"
  rm -f "$MS"/*.yaml
  for _ in $(seq 60); do [ "$($KLET status -o json "${COMMON[@]}" | jq '.items | length')" = 0 ] && break; sleep 1; done
  sleep 3
  leftovers "${ROOTS[1]}" >"$OUT/klet-$g-left.txt"
  $KLET events -o json "${COMMON[@]}" >"$OUT/klet-$g-events.json"
  # klet keeps its events in its root dir: this group's namespace only.
  levents "$OUT/klet-$g-events.json" | grep " $(ls "$M/$g" | head -1 | xargs -I{} awk '/^metadata:/ {print}' "$M/$g/{}" | sed -E 's/.*namespace: ([^}]*)}.*/\1/')/" >"$OUT/klet-$g-events.txt" || true
  kill "$SPID"; wait "$SPID" || true; SPID=''
  $KLET delete --all "${COMMON[@]}" >/dev/null 2>&1 || true
  diff_group "$g" status.json cgroups.txt left.txt events.txt
done
case " $COMPARE_GROUPS " in *" resize "*) compare_resize ;; esac
echo "results in $OUT"
