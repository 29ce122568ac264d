#!/usr/bin/env bash
# Shared set-up of demo.sh and test.sh (source it from the repo root): the
# system packages, a Node.js >= 22, the npm dependencies when the lockfile
# changed, and a build.
bash scripts/install-deps.sh
source scripts/bootstrap.sh
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run build >/dev/null
