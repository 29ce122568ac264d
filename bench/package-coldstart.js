// Cold start of the packaged klet (`npm run package`: its own Node runtime
// + the app, bin/klet a sh script) against `node -e 0` of the same Node
// binary, round-robin, N rounds, medians and ratios: `klet --version`, and
// `klet status` against a klet-managed containerd (no pods) the benchmark
// starts from the package under a temp root dir and stops afterwards (bridge
// included). The checkout's `node bin/run.js status` runs alongside, so the
// package's cost (sh wrapper, its layout) shows as a difference.
// Usage: node bench/package-coldstart.js [rounds=20] [release/klet-*.tar.gz]
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const rounds = Number(process.argv[2] ?? 20);
const version = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version;
const tarball = process.argv[3] ?? path.join(root, 'release', `klet-${version}-linux-${process.arch}.tar.gz`);
if (!fs.existsSync(tarball)) throw new Error(`${tarball} is missing: run npm run package first`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-bench-pkg-'));
execFileSync('tar', ['-C', tmp, '-xzf', tarball]);
const dir = path.join(tmp, `klet-${version}-linux-${process.arch}`);
const klet = path.join(dir, 'bin', 'klet');
const pkgNode = path.join(dir, 'lib', 'node');
const kroot = path.join(tmp, 'root');
const flags = ['--root-dir', kroot, '--container-runtime-endpoint', `unix://${kroot}/containerd.sock`];
const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: os.homedir() };
const { networkFor } = await import(path.join(dir, 'lib', 'app', 'dist', 'lib', 'runtime', 'containerd.js'));

const cases = {
  'node -e 0 (package node)': [pkgNode, ['-e', '0']],
  'package: klet --version': [klet, ['--version']],
  'package: klet status': [klet, ['status', ...flags]],
  'checkout: klet status': [process.execPath, [path.join(root, 'bin', 'run.js'), 'status', ...flags]],
};
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
try {
  execFileSync(klet, ['runtime', 'start', ...flags], { env, stdio: 'ignore' });
  for (const [cmd, args] of Object.values(cases)) spawnSync(cmd, args, { stdio: 'ignore', env });
  for (let i = 0; i < rounds; i++) {
    for (const [name, [cmd, args]] of Object.entries(cases)) {
      const t0 = process.hrtime.bigint();
      const r = spawnSync(cmd, args, { stdio: 'ignore', env });
      const t1 = process.hrtime.bigint();
      if (r.status !== 0) throw new Error(`${name} exited ${r.status}`);
      times[name].push(Number(t1 - t0) / 1e6);
    }
  }
} finally {
  spawnSync(klet, ['runtime', 'stop', ...flags], { env, stdio: 'ignore' });
  spawnSync('ip', ['link', 'del', networkFor(kroot).bridge], { stdio: 'ignore' });
  fs.rmSync(tmp, { recursive: true, force: true });
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const base = median(times['node -e 0 (package node)']);
const tarMb = (fs.statSync(tarball).size / 1e6).toFixed(1);
console.log(`${path.basename(tarball)}: ${tarMb} MB; ${rounds} rounds; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
for (const [name, xs] of Object.entries(times)) {
  const med = median(xs);
  console.log(`${name.padEnd(28)} median ${med.toFixed(1).padStart(7)} ms   ${(med / base).toFixed(2).padStart(5)}x`);
}
