// `klet runonce`'s code path as a few files (dist/bundle/), the last step of
// `npm run build`: bin/run.js loads it instead of dist/cli/runonce-entry.js
// and the ~150 modules behind it (klet's own ~80 and the YAML parser's 72).
// Node resolves, reads, links and evaluates every ES module one by one; in a
// 30-pod runonce that was ~35-45 ms of the start before the first
// RunPodSandbox, which costs the run's end about one to one (bench/README.md,
// twelfth session). The CRI client's packages (@grpc/grpc-js,
// @bufbuild/protobuf) stay external: a bundle of grpc-js measured slower
// (sixth session), and the floor loads them the same way.
//
// bin/run.js uses the bundle only when it is at least as new as the dist/cli
// entry (in whole seconds), so a `tsc` run without this step falls back to
// the modules it just compiled rather than running stale code. Lazy imports
// (the progress UI, listr2, -o yaml's printer) stay lazy: they become chunks.
// A lazily imported CommonJS package's chunk exports only `default` (its
// module.exports), so such an import takes `.default` (src/cli/output.ts),
// which is also what Node gives.
import { copyFile, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = path.join(root, 'dist', 'bundle');
await rm(out, { recursive: true, force: true });
await esbuild.build({
  absWorkingDir: root,
  entryPoints: ['dist/cli/runonce-entry.js'],
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  outdir: out,
  entryNames: '[name]',
  chunkNames: 'chunk-[hash]',
  outExtension: { '.js': '.mjs' },
  external: ['@grpc/grpc-js', '@bufbuild/protobuf'],
  // The bundled CommonJS packages (yaml) require Node's built-ins; an ES module has no `require` of its own.
  banner: { js: "import { createRequire as kletCreateRequire } from 'node:module'; const require = kletCreateRequire(import.meta.url);" },
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
});
// decode.ts reads the model schema relative to its own file (createRequire(import.meta.url)):
// in the bundle that is dist/bundle/, so the schema goes next to it.
const schema = 'lib/pod/gen/k8s-schema.json';
await mkdir(path.join(out, 'gen'), { recursive: true });
await copyFile(path.join(root, 'dist', schema), path.join(out, 'gen', path.basename(schema)));
