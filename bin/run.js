#!/usr/bin/env node
// klet entry: uses the generated oclif manifest; nothing else loads at start-up.
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  process.stderr.write(`error: klet needs Node.js 22 or newer, this is ${process.version} (source scripts/bootstrap.sh)\n`);
  process.exit(1);
}
const { execute } = await import('@oclif/core');
await execute({ dir: import.meta.url });
