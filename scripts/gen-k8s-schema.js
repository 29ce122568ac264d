// Extracts the attribute metadata of the @kubernetes/client-node models klet
// decodes (everything reachable from ROOTS below) into src/lib/pod/gen/k8s-schema.json. Loading that file costs
// ~1 ms; loading client-node's ObjectSerializer (which imports ~1000 model
// modules) costs ~0.35 s on every pod command. Run after upgrading
// client-node: `npm run gen:k8s-schema` (CI checks the file is current).
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as models from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
// The manifests' kinds, and what the node's API client (lib/kube/node-api.ts) decodes from the API server.
const ROOTS = ['V1Pod', 'V1PodList', 'V1ConfigMap', 'V1Secret', 'V1ListMeta', 'V1ConfigMapList', 'V1SecretList', 'V1Service', 'V1ServiceList', 'V1Node', 'V1Lease', 'V1CertificateSigningRequest'];
const schema = {};
const inner = (t) => {
  if (t.startsWith('Array<')) return inner(t.slice(6, -1));
  if (t.startsWith('{ [key: string]: ')) return inner(t.slice(17, -3));
  return t;
};
const queue = [...ROOTS];
while (queue.length > 0) {
  const name = queue.shift();
  if (name in schema) continue;
  const cls = models[name];
  if (typeof cls?.getAttributeTypeMap !== 'function') continue;
  schema[name] = cls.getAttributeTypeMap().map(({ name: n, baseName, type, format }) => ({ name: n, baseName, type, format: format ?? '' }));
  for (const a of schema[name]) queue.push(inner(a.type));
}
const sorted = Object.fromEntries(Object.keys(schema).sort().map((k) => [k, schema[k]]));
const out = path.join(root, 'src/lib/pod/gen/k8s-schema.json');
await writeFile(out, JSON.stringify(sorted, null, 1) + '\n');
console.log(`wrote ${path.relative(root, out)}: ${Object.keys(sorted).length} models`);
