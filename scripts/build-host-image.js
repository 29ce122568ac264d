#!/usr/bin/env node
// Build an OCI image archive that runs one binary of this host, with the
// shared libraries it links, for `klet images import`. Needs `npm run build`.
//   node scripts/build-host-image.js BINARY IMAGE-NAME OUT.tar
// e.g. node scripts/build-host-image.js /usr/bin/etcd localhost/klet/etcd:3.4.23 /tmp/etcd.tar
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [binary, name, out] = process.argv.slice(2);
if (!binary || !name || !out) {
  process.stderr.write('usage: node scripts/build-host-image.js BINARY IMAGE-NAME OUT.tar\n');
  process.exit(2);
}
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { buildOciImage, hostBinaryImageSpec } = await import(path.join(root, 'dist', 'lib', 'runtime', 'oci-image.js'));
try {
  const img = await buildOciImage({ ...(await hostBinaryImageSpec({ name, binary })), outFile: out });
  process.stdout.write(`built ${img.name} (${img.configDigest}) in ${img.file}\n`);
} catch (err) {
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
