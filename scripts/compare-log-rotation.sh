#!/usr/bin/env bash
# Container log rotation, the real kubelet (standalone) then klet sync, one
# after the other on one private klet-managed containerd, with the same
# settings (containerLogMaxSize 64Ki, containerLogMaxFiles 3,
# containerLogMonitorInterval 3s) and the same chatty static pod (200 numbered
# lines of ~230 bytes a second) for HOLD (25) seconds each. Prints, per agent,
# the files of the container's log dir (name, size, lines), whether the
# gzipped ones decompress, and whether the kept files' line numbers run on
# without a gap.
#
#   scripts/compare-log-rotation.sh [OUT]
#
# Needs what scripts/compare-kubelet.sh needs (root, a built klet, Node 24 on
# PATH, the kubelet of scripts/build-k8s.sh).
set -euo pipefail
OUT=${1:-$(mktemp -d /tmp/klet-compare-logrot-XXXXXX)}
mkdir -p "$OUT"
KUBELET_EXTRA=$'containerLogMaxSize: 64Ki\ncontainerLogMaxFiles: 3\ncontainerLogMonitorInterval: 3s'
# shellcheck source=scripts/lib/compare-common.sh
. "$(dirname "$0")/lib/compare-common.sh"
HOLD=${HOLD:-25}

$KLET runtime start "${COMMON[@]}" >"$OUT/runtime-start.txt"

M="$OUT/manifests"
mkdir -p "$M"
SCRIPT='n=0; pad=$(printf "%0200d" 0); trap "exit 0" TERM; while true; do for k in $(seq 1 200); do n=$((n+1)); echo "line $n $pad"; done; sleep 1; done'
printf '%s\n' \
  'apiVersion: v1' \
  'kind: Pod' \
  'metadata: {name: chatty}' \
  'spec:' \
  '  terminationGracePeriodSeconds: 1' \
  '  containers:' \
  '    - name: c' \
  "      image: $BB" \
  "      command: [\"sh\", \"-c\", $(jq -Rn --arg s "$SCRIPT" '$s')]" >"$M/chatty.yaml"

# The container's log dir under $1 (one pod): its files and what they hold.
report() {
  local dir
  dir=$(find "$1" -mindepth 2 -maxdepth 2 -type d -name c | head -1)
  [ -n "$dir" ] || { echo "no container log dir under $1"; return; }
  echo "dir: ${dir#"$1"/}"
  local all="$OUT/lines.tmp" f p text
  : >"$all"
  # Oldest first: the rotated files by name, then the live one.
  for f in $(find "$dir" -mindepth 1 -maxdepth 1 -printf '%f\n' | grep -v '^0\.log$' | sort) 0.log; do
    p="$dir/$f"
    if [[ $f == *.gz ]]; then
      text=$(gzip -dc "$p" 2>/dev/null) || { echo "$f: does not decompress"; continue; }
    else
      text=$(cat "$p")
    fi
    printf '%s: %s bytes on disk, %s lines\n' "$f" "$(stat -c %s "$p")" "$(grep -c . <<<"$text")"
    grep -o 'stdout [FP] line [0-9]*' <<<"$text" | awk '{print $4}' >>"$all"
  done
  awk 'NR == 1 { first = $1 } NR > 1 && $1 != prev + 1 { gaps++ } { prev = $1 } END { printf "line numbers %s..%s, gaps: %d\n", first, prev, gaps + 0 }' "$all"
  rm -f "$all"
}

# ---- the kubelet -------------------------------------------------------
MK="$OUT/manifests-kubelet"
cp -r "$M" "$MK"
run_kubelet "$MK" main
sleep "$HOLD"
echo "== kubelet v1.34.4" | tee "$OUT/report.txt"
report "$OUT/kubelet-main/pod-logs" | tee -a "$OUT/report.txt"
empty_kubelet "$MK"
stop_kubelet

# ---- klet --------------------------------------------------------------
mkdir -p "$OUT/klet/pod-logs"
printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: %s\n%s\n' "$OUT/klet/pod-logs" "$KUBELET_EXTRA" >"$OUT/klet/config.yaml"
$KLET sync --config "$OUT/klet/config.yaml" --manifest-dir "$M" --file-check-frequency 1s --cgroups-per-qos=false --enforce-node-allocatable=none "${COMMON[@]}" >"$OUT/klet-sync.log" 2>&1 &
SPID=$!
sleep "$HOLD"
echo "== klet $(git -C "$HERE" rev-parse --short HEAD)" | tee -a "$OUT/report.txt"
report "$OUT/klet/pod-logs" | tee -a "$OUT/report.txt"
kill "$SPID"
wait "$SPID" || true
SPID=''
echo "written: $OUT/report.txt"
