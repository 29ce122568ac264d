#!/usr/bin/env bash
# The localhost healthz endpoint, the real kubelet (standalone) then klet sync, one after the other on one
# private klet-managed containerd: the status, content type and body of each path, and their diff.
#
#   scripts/compare-healthz.sh [OUT]
#
# Needs what scripts/compare-kubelet.sh needs.
set -euo pipefail
OUT=${1:-$(mktemp -d /tmp/klet-compare-healthz-XXXXXX)}
mkdir -p "$OUT"
# shellcheck source=scripts/lib/compare-common.sh
. "$(dirname "$0")/lib/compare-common.sh"
$KLET runtime start "${COMMON[@]}" >"$OUT/runtime-start.txt"
mkdir -p "$OUT/m"
probe() { # $1 port
  for p in /healthz '/healthz?verbose' '/healthz?verbose&exclude=ping&exclude=x' /healthz/ping /healthz/ / /pods /healthz/log; do
    printf '%s ' "$p"; curl -s -o "$OUT/body" -w '%{http_code} %{content_type}' "http://127.0.0.1:$1$p"; printf ' %q\n' "$(cat "$OUT/body")"
  done
  printf 'POST /healthz '; curl -s -X POST -o "$OUT/body" -w '%{http_code}' "http://127.0.0.1:$1/healthz"; printf ' %q\n' "$(cat "$OUT/body")"
}
run_kubelet "$OUT/m" main
HZ=$((RO + 2))
echo "== kubelet" ; probe $HZ | tee "$OUT/kubelet.txt"
stop_kubelet
P=$((RO + 3))
$KLET sync --manifest-dir "$OUT/m" --healthz-port $P --cgroups-per-qos=false --enforce-node-allocatable=none "${COMMON[@]}" >"$OUT/klet.log" 2>&1 &
SPID=$!
for _ in $(seq 40); do curl -sf "http://127.0.0.1:$P/healthz" >/dev/null && break; sleep 0.5; done
echo "== klet"; probe $P | tee "$OUT/klet.txt"
kill $SPID; wait $SPID || true; SPID=''
diff "$OUT/kubelet.txt" "$OUT/klet.txt" && echo SAME
