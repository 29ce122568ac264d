#!/usr/bin/env bash
# The main job on the embedded default, from a fresh Debian/Ubuntu machine
# (run as root): installs what is missing (containerd, runc, the CNI plugins,
# a Node.js >= 22), builds klet and puts it on PATH (/usr/local/bin/klet),
# starts the klet-managed containerd (which builds and imports the local pause
# and busybox images: no registry needed), and runs every pod in examples/
# once. Run it again at will: each step only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
node bin/run.js runtime start
node bin/run.js runonce --manifest-dir examples/ "$@"
