#!/usr/bin/env bash
# The whole test suite, from a fresh Debian/Ubuntu machine (run as root):
# installs the runtime packages, a Node >= 22, the npm dependencies, builds,
# then `npm test` (unit tests + integration tests against private containerd
# instances the tests start themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
npm test
