// Copies the JSON assets tsc does not emit (the generated client-node model schema) into dist/.
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
for (const rel of ['lib/pod/gen/k8s-schema.json']) {
  await mkdir(path.dirname(path.join(root, 'dist', rel)), { recursive: true });
  await copyFile(path.join(root, 'src', rel), path.join(root, 'dist', rel));
}
