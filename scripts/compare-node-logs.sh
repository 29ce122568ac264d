#!/usr/bin/env bash
# The kubelet server's /logs/ (the node's /var/log), the real kubelet
# (standalone) then klet sync, one after the other on one private klet-managed
# containerd, each serving HTTPS on loopback with anonymous requests allowed:
# the status, Location, Content-Type, Content-Length and body digest of each
# path, and their diff.
#
#   scripts/compare-node-logs.sh [OUT]
#
# Needs what scripts/compare-kubelet.sh needs.
set -euo pipefail
OUT=${1:-$(mktemp -d /tmp/klet-compare-nodelogs-XXXXXX)}
mkdir -p "$OUT"
# shellcheck source=scripts/lib/compare-common.sh
. "$(dirname "$0")/lib/compare-common.sh"

$KLET runtime start "${COMMON[@]}" >"$OUT/runtime-start.txt"
mkdir -p "$OUT/m"

# A fixed tree under /var/log for the run (removed at the end): a directory, a text file, a gzip, a
# binary file, an index.html, a name that needs escaping.
T=/var/log/klet-compare-$$
mkdir -p "$T/sub" "$T/site"
printf 'line one\nline two\n' >"$T/app.log"
printf 'plain\n' >"$T/noext"
printf 'x' | gzip -c >"$T/old.log.gz"
printf '\x00\x01\x02binary' >"$T/data.bin"
printf '<html><body>hi</body></html>\n' >"$T/site/index.html"
printf 'a\n' >"$T/sub/a&b <c>.txt"
touch -d '2026-01-02 03:04:05 UTC' "$T" "$T"/* "$T"/sub/* "$T"/site/*
compare_cleanup_hook() { rm -rf "$T"; }
B=/logs/${T#/var/log/}

probe() { # $1 port
  local p
  for p in "$B/" "$B" "$B/app.log" "$B/app.log/" "$B/noext" "$B/old.log.gz" "$B/data.bin" "$B/site/" "$B/site/index.html" \
    "$B/sub/" "$B/nope" "$B/sub/nope/" /logs "$B/app.log?x=1" "$B?y=2"; do
    printf '%s ' "$p"
    # HTTP/1.1 for both (the kubelet's Go server also offers h2); header names lower-cased.
    curl -sk --http1.1 -o "$OUT/body" -D "$OUT/headers" "https://127.0.0.1:$1$p" || true
    printf '%s ' "$(head -1 "$OUT/headers" | tr -d '\r' | cut -d' ' -f2)"
    grep -i -E '^(location|content-type|content-length|last-modified):' "$OUT/headers" | tr -d '\r' | sed 's/^[^:]*:/\L&/' | sort | tr '\n' ' '
    printf '%s\n' "$(sha256sum <"$OUT/body" | cut -c1-16)"
  done
  printf 'HEAD %s ' "$B/app.log"
  curl -sk --http1.1 -o /dev/null -w '%{http_code}' -I "https://127.0.0.1:$1$B/app.log"
  echo
  printf 'IMS %s ' "$B/app.log"
  curl -sk -o /dev/null -w '%{http_code}\n' -H 'If-Modified-Since: Sat, 03 Jan 2026 00:00:00 GMT' "https://127.0.0.1:$1$B/app.log"
}

run_kubelet "$OUT/m" main
echo "== kubelet v1.34.4"
probe $((RO + 1)) | tee "$OUT/kubelet.txt"
stop_kubelet

P=$((RO + 3))
$KLET sync --manifest-dir "$OUT/m" --address 127.0.0.1 --port "$P" --anonymous-auth=true --cgroups-per-qos=false --enforce-node-allocatable=none "${COMMON[@]}" >"$OUT/klet.log" 2>&1 &
SPID=$!
for _ in $(seq 40); do curl -sk -o /dev/null "https://127.0.0.1:$P/healthz" && break; sleep 0.5; done
echo "== klet $(git -C "$HERE" rev-parse --short HEAD)"
probe "$P" | tee "$OUT/klet.txt"
kill "$SPID"
wait "$SPID" || true
SPID=''
if diff "$OUT/kubelet.txt" "$OUT/klet.txt"; then echo "the same"; fi
