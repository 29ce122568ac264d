#!/usr/bin/env bash
# Shared set-up of demo.sh and test.sh (source it from the repo root): the
# system packages, a Node.js >= 22, the npm dependencies when the lockfile
# changed, a build, and `klet` on PATH (/usr/local/bin/klet, see
# install-klet.sh). Quiet when all goes well; a failing step prints its output.
bash scripts/install-deps.sh
source scripts/bootstrap.sh
klet_quiet() {
  local out
  out="$("$@" 2>&1)" || { printf '%s\n' "$out" >&2; echo "setup: failed: $*" >&2; return 1; }
}
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  klet_quiet npm ci --no-audit --no-fund --loglevel=error
fi
klet_quiet npm run build
bash scripts/install-klet.sh
unset -f klet_quiet
