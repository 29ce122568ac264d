#!/usr/bin/env bash
# Compare klet with the real kubelet (standalone) on a container whose
# command does not exist (the runtime's StartError, exit 128), one after the
# other on one private klet-managed containerd: after 60 s, each agent's
# restartCount, waiting reason and message, last termination, and how many
# instances of the container the runtime holds (the pod container deletor
# keeps one dead one). Writes everything under OUT and prints a table.
#
#   scripts/compare-start-failure.sh [OUT]
#
# Needs root, a built klet (npm run build), Node 24 on PATH, jq, and the
# kubelet built by scripts/build-k8s.sh (KUBELET). Never run it on a runtime
# anything else uses.
set -euo pipefail
OUT=${1:-$(mktemp -d /tmp/klet-compare-XXXXXX)}
mkdir -p "$OUT"
# shellcheck source=scripts/lib/compare-common.sh
. "$(dirname "$0")/lib/compare-common.sh"
WAIT=${WAIT:-60}
$KLET runtime start "${COMMON[@]}" >"$OUT/runtime-start.txt"
M="$OUT/manifests"
mkdir -p "$M"
# The manifest (written again for klet: emptying the kubelet's static pod path removes it).
manifest() {
  manifest
}
manifest
# How many instances of the container of the pod with uid $1 the runtime holds (dead ones included).
instances() {
  node --input-type=module -e '
const { CriClient } = await import(process.argv[1]);
const c = CriClient.connect(process.argv[2], { timeoutMs: 10000 });
const { containers } = await c.listContainers({});
console.log(containers.filter((x) => x.labels["io.kubernetes.pod.uid"] === process.argv[3]).length);
c.close();' "$HERE/dist/lib/cri/index.js" "$EP" "$1"
}

# ---- the kubelet ---------------------------------------------------------
run_kubelet "$M" a
sleep "$WAIT"
kpods "$OUT/kubelet-pods.json"
K_INST=$(instances "$(jq -r '.items[] | select(.metadata.name | startswith("nobin")) | .metadata.uid' "$OUT/kubelet-pods.json")")
empty_kubelet "$M" || true
stop_kubelet

# ---- klet sync -----------------------------------------------------------
cat >"$M/nobin.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: nobin}
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - {name: app, image: $BB, command: ["/no/such/binary"]}
YAML
$KLET sync --manifest-dir "$M" "${COMMON[@]}" --cgroups-per-qos=false --enforce-node-allocatable=none >"$OUT/klet-sync.out" 2>"$OUT/klet-sync.err" &
SPID=$!
sleep "$WAIT"
$KLET status "nobin-$NODE" -o json "${COMMON[@]}" >"$OUT/klet-pod.json"
L_INST=$(instances "$(jq -r .metadata.uid "$OUT/klet-pod.json")")
kill "$SPID"; wait "$SPID" || true; SPID=''

row() { # agent, pod json
  jq -r --arg a "$1" --arg n "$2" '.status.containerStatuses[0] | [$a, (.restartCount|tostring), (.state.waiting.reason // "-"), ((.state.waiting.message // "-") | split(" restarting")[0]), ((.lastState.terminated.reason // "-") + " " + ((.lastState.terminated.exitCode // "-")|tostring)), $n] | @tsv'
}
{
  printf 'agent\trestartCount after %ss\twaiting\tmessage\tlast termination\tinstances in the runtime\n' "$WAIT"
  jq '.items[] | select(.metadata.name | startswith("nobin"))' "$OUT/kubelet-pods.json" | row "kubelet $("$KUBELET" --version | awk '{print $2}')" "$K_INST"
  row "klet $(git -C "$HERE" rev-parse --short HEAD)" "$L_INST" <"$OUT/klet-pod.json"
} | column -t -s $'\t' | tee "$OUT/table.txt"
echo "$OUT"
