#!/usr/bin/env bash
# Puts `klet` on PATH as /usr/local/bin/klet (or $KLET_BIN_DIR/klet): a
# two-line shell script running this checkout's bin/run.js with the Node.js
# that `node` is now (the one scripts/bootstrap.sh put on PATH), by absolute
# path, so root, cron jobs and scripts get a working klet without sourcing
# anything and whatever `node` their PATH holds. Idempotent and quiet; a
# /usr/local/bin/klet that this script did not write is left alone.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
node="$(node -p process.execPath)"
dir="${KLET_BIN_DIR:-/usr/local/bin}"
target="$dir/klet"
marker="# written by klet's scripts/install-klet.sh"
want="#!/bin/sh
$marker
exec '$node' '$root/bin/run.js' \"\$@\""
if [ -e "$target" ] || [ -L "$target" ]; then
  [ "$(cat "$target" 2>/dev/null)" = "$want" ] && exit 0
  if [ -L "$target" ] || ! grep -qxF "$marker" "$target"; then
    echo "install-klet: $target exists and was not written by klet's install-klet.sh; leaving it (run klet as: $node $root/bin/run.js)" >&2
    exit 0
  fi
fi
mkdir -p "$dir"
printf '%s\n' "$want" >"$target.tmp.$$"
chmod 0755 "$target.tmp.$$"
mv -f "$target.tmp.$$" "$target"
