#!/usr/bin/env bash
# CI: klet installs the ways the README shows, and runs from each.
#   1. `npm install -g .` from the checkout, and `npm install -g` of the
#      packed tarball (npm pack), each into a throw-away prefix: `klet --version`;
#      under a Node.js older than 22 (the distribution's, when it is) the bin
#      shim refuses with one line and exit 1.
#   2. `npm run package`: the tarball unpacked into a temp dir, its bin/klet
#      run with a bare PATH (no Node.js on it): `klet --version`, and one
#      `klet runonce` of examples/job.yaml against a klet-managed containerd
#      under a temp root dir, stopped afterwards (with its bridge); that run
#      must load runonce's code from dist/bundle/, and a second run from the
#      code cache the first one wrote there.
# Needs a build and a Node.js >= 22 on PATH (source scripts/bootstrap.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
tmp="$(mktemp -d)"
root="$tmp/root"
klet=""
cleanup() {
  local rc=$?
  set +e
  if [ -n "$klet" ] && [ -S "$root/containerd.sock" ]; then
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$klet" runtime stop --root-dir "$root" --container-runtime-endpoint "unix://$root/containerd.sock" >/dev/null 2>&1
  fi
  if [ -n "${bridge:-}" ]; then ip link del "$bridge" 2>/dev/null; fi
  rm -rf "$tmp"
  [ "$rc" -eq 0 ] || echo "smoke-install: FAILED (exit $rc)" >&2
  exit "$rc"
}
trap cleanup EXIT
say() { echo "--- $*"; }

# 1. npm install -g
say "npm install -g . (from the checkout)"
npm install -g --prefix "$tmp/g1" --no-audit --no-fund --loglevel=error . >/dev/null
"$tmp/g1/bin/klet" --version
say "npm install -g klet-*.tgz (npm pack)"
tgz="$(npm pack --silent --pack-destination "$tmp" 2>/dev/null | tail -n1)"
npm install -g --prefix "$tmp/g2" --no-audit --no-fund --loglevel=error "$tmp/$tgz" >/dev/null
"$tmp/g2/bin/klet" --version
"$tmp/g2/bin/klet" runtime --help | grep -q 'runtime start'
old_node=""
for n in /usr/bin/node /usr/bin/nodejs; do
  if [ -x "$n" ] && [ "$("$n" -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then old_node="$n"; break; fi
done
if [ -n "$old_node" ]; then
  say "the bin shim under $old_node ($("$old_node" --version)) refuses"
  set +e
  err="$(env -i PATH="$(dirname "$old_node"):/usr/bin:/bin" "$tmp/g2/bin/klet" --version 2>&1)"
  rc=$?
  set -e
  echo "$err"
  [ "$rc" = 1 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && printf '%s' "$err" | grep -q 'klet needs Node.js 22 or newer' || {
    echo "smoke-install: expected a one-line refusal with exit 1, got exit $rc" >&2
    exit 1
  }
else
  say "no Node.js older than 22 on this machine: the shim's refusal is not exercised"
fi

# 2. The packaged tarball
say "npm run package"
pkg="$(npm run --silent package)"
mkdir -p "$tmp/pkg"
tar -C "$tmp/pkg" -xzf "$pkg"
klet="$(echo "$tmp"/pkg/klet-*/bin/klet)"
bare() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
bare "$klet" --version
say "runonce from the package, on a klet-managed containerd under $root"
bridge="$(bare "$(dirname "$klet")/../lib/node" --input-type=module -e "
  const m = await import('$(dirname "$klet")/../lib/app/dist/lib/runtime/containerd.js');
  console.log(m.networkFor('$root').bridge);")"
flags=(--root-dir "$root" --container-runtime-endpoint "unix://$root/containerd.sock" --node-name smoke)
# runonce makes pod cgroups as klet sync does: never in the host's /kubepods here.
flat=(--cgroups-per-qos=false --enforce-node-allocatable=none)
bare "$klet" runtime start "${flags[@]}"
mkdir -p "$tmp/manifests"
cp "$repo/examples/job.yaml" "$tmp/manifests/"
# --cleanup: the pod and its log dir under /var/log/pods go with the run (checked), so CI leaves nothing there.
logs_before="$(ls /var/log/pods 2>/dev/null | grep -c '_job-smoke_' || true)"
# A preload counts the files of the app's dist/ it loads: runonce must run from
# dist/bundle/ (scripts/bundle.js; bin/run.js picks it by its times, which the
# package keeps), not from dist/'s modules one by one.
cat > "$tmp/dist-probe.mjs" <<'EOF'
import { registerHooks } from 'node:module';
const n = { bundle: 0, other: 0 };
registerHooks({ load(url, ctx, next) { if (url.includes('/lib/app/dist/')) n[url.includes('/lib/app/dist/bundle/') ? 'bundle' : 'other'] += 1; return next(url, ctx); } });
process.on('exit', () => process.stderr.write(`[dist/bundle files: ${n.bundle}, other dist files: ${n.other}]\n`));
EOF
if ! bare env NODE_OPTIONS="--import $tmp/dist-probe.mjs" "$klet" runonce --cleanup --manifest-dir "$tmp/manifests" "${flags[@]}" "${flat[@]}" 2>"$tmp/runonce.err"; then
  cat "$tmp/runonce.err" >&2
  exit 1
fi
cat "$tmp/runonce.err" >&2
grep -Eq '^\[dist/bundle files: [1-9][0-9]*, other dist files: 0\]$' "$tmp/runonce.err" || {
  echo "smoke-install: the package's runonce did not run from dist/bundle/ ($(tail -n1 "$tmp/runonce.err"))" >&2
  exit 1
}
# The first run wrote the bundle's code cache next to it (src/cli/cached-script.ts);
# a second run takes its code from there: V8 accepts the cache, so it is not
# written again (a refused one is replaced: a new file).
cache="$(ls -d "$(dirname "$klet")"/../lib/app/dist/bundle/.runonce.cjs.*.cache 2>/dev/null || true)"
[ -n "$cache" ] || { echo "smoke-install: runonce wrote no code cache in the package's dist/bundle/" >&2; exit 1; }
inode="$(stat -c %i "$cache")"
bare "$klet" runonce --cleanup --manifest-dir "$tmp/manifests" "${flags[@]}" "${flat[@]}" >/dev/null
[ "$(stat -c %i "$cache" 2>/dev/null)" = "$inode" ] || { echo "smoke-install: the second runonce did not use the code cache the first one wrote ($cache)" >&2; exit 1; }
logs_after="$(ls /var/log/pods 2>/dev/null | grep -c '_job-smoke_' || true)"
if [ "$logs_after" != "$logs_before" ]; then
  echo "smoke-install: runonce --cleanup left its pod's log dir in /var/log/pods ($logs_before -> $logs_after)" >&2
  exit 1
fi
bare "$klet" runtime stop "${flags[@]}"
say "smoke-install: OK"
