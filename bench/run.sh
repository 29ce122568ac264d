#!/usr/bin/env bash
# Every benchmark (as root, after `npm run build`); see README.md.
#   npm run bench: klet vs the CRI floor and the real kubelet, every scenario
#   package-coldstart.js: the packaged klet's start-up
#   pleg.js: PLEG relist + diff vs the bare list calls (in-process)
#   sync.js: klet sync's view latency and RSS with the local API polled
#   probes.js: klet sync's prober: CPU, lateness, RSS growth
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
npm run bench -- "$@"
echo "== the packaged klet (npm run package): klet --version, klet status vs its node -e 0"
npm run --silent package >/dev/null
node bench/package-coldstart.js 20
echo "== PLEG relist + diff vs the bare list calls, 110 pods"
node bench/pleg.js 50 110
echo "== klet sync holding 110 pods: CPU, RSS, exit-to-status latency"
node bench/sync.js 110 60 20
echo "== klet sync probing pods (1 s exec readiness + 1 s httpGet liveness): CPU, lateness, RSS growth"
node bench/probes.js 110 600
echo "== klet dashboard watching 110 pods that change state once a second: CPU, frame render time, RSS"
node bench/dashboard.js 600 110
