// Writes oclif.manifest.json from the built commands, so the CLI never scans
// dist/commands at start-up. (The same thing `oclif manifest` does, without
// pulling the whole oclif dev toolchain in.)
import { Plugin } from '@oclif/core';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const plugin = new Plugin({ root, type: 'core', isRoot: true, ignoreManifest: true, errorOnManifestCreate: true });
await plugin.load();
const out = path.join(root, 'oclif.manifest.json');
await writeFile(out, JSON.stringify(plugin.manifest, null, 2) + '\n');
console.log(`wrote ${path.relative(process.cwd(), out)} with ${Object.keys(plugin.manifest.commands).length} commands`);
