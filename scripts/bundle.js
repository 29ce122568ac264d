// `klet runonce`'s code path as one file (dist/bundle/runonce.cjs), the last
// step of `npm run build`: bin/run.js loads it (through
// dist/bundle/runonce-entry.mjs) instead of dist/cli/runonce-entry.js and the
// ~150 modules behind it (klet's own ~80 and the YAML parser's 72). Node
// resolves, reads, links and evaluates every ES module one by one; in a
// 30-pod runonce that was ~35-45 ms of the start before the first
// RunPodSandbox, which costs the run's end about one to one (bench/results/HISTORY.md,
// twelfth session). As one CommonJS file it can be run through a vm.Script
// whose code cache is made after a run, with every function that run
// compiled (src/cli/cached-script.ts): ~40 ms less again (fifteenth session).
//
// bin/run.js uses the bundle only when it is at least as new as the dist/cli
// entry (in whole seconds), so a `tsc` run without this step falls back to
// the modules it just compiled rather than running stale code. Lazy imports
// (the progress UI, listr2, -o yaml's printer) stay lazy: esbuild runs a
// module first imported with import() only then. A lazily imported CommonJS
// package is seen through its `default` (module.exports), so such an import
// takes `.default` (src/cli/output.ts), which is also what Node gives.
import { copyFile, mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = path.join(root, 'dist', 'bundle');
await rm(out, { recursive: true, force: true });
// The whole code path as one CommonJS file, loaded through a V8 code cache
// made at the end of a run (src/cli/cached-script.ts): the functions the run
// compiled come from the cache next time. @grpc/grpc-js stays out (imported
// only for a pod with a grpc probe) and is loaded with require(): import() in
// a vm.Script needs a loader callback Node still calls experimental (and
// warns about on stderr). ES modules are strict: so is the bundle.
const requireLeftOut = {
  name: 'require-left-out',
  setup(build) {
    build.onResolve({ filter: /^@grpc\/grpc-js$/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, namespace: 'left-out' } : { path: args.path, external: true },
    );
    build.onLoad({ filter: /.*/, namespace: 'left-out' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: 'js' }));
  },
};
await esbuild.build({
  absWorkingDir: root,
  entryPoints: ['dist/cli/runonce-entry.js'],
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node22',
  outfile: path.join(out, 'runonce.cjs'),
  plugins: [requireLeftOut],
  // decode.ts finds the model schema from import.meta.url, which CommonJS has not: the bundle's own file's URL.
  define: { 'import.meta.url': 'kletBundleUrl' },
  banner: { js: "'use strict';\nvar kletBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
});
const code = await readFile(path.join(out, 'runonce.cjs'), 'utf8');
const dynamicImport = /(?<![\w$.])import\(/.exec(code);
if (dynamicImport) {
  const line = code.slice(0, dynamicImport.index).split('\n').length;
  throw new Error(`dist/bundle/runonce.cjs:${line}: import() of a module left out of the bundle; load it with require() (see requireLeftOut)`);
}
// bin/run.js imports runOnceEntry from dist/bundle/runonce-entry.mjs: a small
// ES module that loads runonce.cjs through its code cache.
await esbuild.build({
  absWorkingDir: root,
  stdin: {
    contents: [
      "import { fileURLToPath } from 'node:url';",
      "import { loadBundle } from './dist/cli/cached-script.js';",
      "export const { runOnceEntry } = loadBundle(fileURLToPath(new URL('./runonce.cjs', import.meta.url))).exports;",
    ].join('\n'),
    resolveDir: root,
    sourcefile: 'runonce-entry.mjs',
    loader: 'js',
  },
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  outfile: path.join(out, 'runonce-entry.mjs'),
  logLevel: 'warning',
});
// decode.ts reads the model schema relative to its own file (createRequire(import.meta.url)):
// in the bundle that is dist/bundle/, so the schema goes next to it.
const schema = 'lib/pod/gen/k8s-schema.json';
await mkdir(path.join(out, 'gen'), { recursive: true });
await copyFile(path.join(root, 'dist', schema), path.join(out, 'gen', path.basename(schema)));
