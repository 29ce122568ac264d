#!/usr/bin/env bash
# All benchmarks, one after another (as root, after `npm run build`). Each
# runs its baseline side by side with klet and prints ratios; see README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
echo "== cold start (klet --version, klet status --help vs node -e 0)"
node bench/coldstart.js 20
echo "== the packaged klet (npm run package): klet --version, klet status vs its node -e 0"
npm run --silent package >/dev/null
node bench/package-coldstart.js 20
echo "== runonce of 20 pods vs the CRI floor"
node bench/runonce.js 5 20
echo "== PLEG relist + diff vs the bare list calls, 110 pods"
node bench/pleg.js 50 110
echo "== klet sync holding 110 pods: CPU, RSS, exit-to-status latency"
node bench/sync.js 110 60 20
echo "== klet sync probing pods (1 s exec readiness + 1 s httpGet liveness): CPU, lateness, RSS growth"
node bench/probes.js 110 600
echo "== klet dashboard watching 110 pods that change state once a second: CPU, frame render time, RSS"
node bench/dashboard.js 600 110
