#!/usr/bin/env bash
# The main job on the embedded default, from a fresh Debian/Ubuntu machine
# (run as root): installs what is missing, builds klet, starts the
# klet-managed containerd (which builds and imports the local pause and
# busybox images: no registry needed), and runs every pod in examples/ once.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
source scripts/bootstrap.sh
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run build >/dev/null
node bin/run.js runtime start
node bin/run.js runonce --manifest-dir examples/ "$@"
