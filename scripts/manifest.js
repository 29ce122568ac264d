// Build-time metadata, so the CLI does no discovery work at start-up:
//  - oclif.manifest.json from the built commands (what `oclif manifest`
//    does, without pulling the whole oclif dev toolchain in);
//  - dist/help.json: every command's --help (and the root help) rendered by
//    oclif's own Help class from that same metadata, at 80 columns, so
//    `klet CMD --help` prints without loading oclif (bin/run.js).
import { Config, Help, Plugin } from '@oclif/core';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const plugin = new Plugin({ root, type: 'core', isRoot: true, ignoreManifest: true, errorOnManifestCreate: true });
await plugin.load();
const out = path.join(root, 'oclif.manifest.json');
await writeFile(out, JSON.stringify(plugin.manifest, null, 2) + '\n');

/**
 * Render with oclif's Help, capturing what it would print. oclif's
 * formatCommand() and formatCommands() rewrite the id of the command they
 * render in place (`runtime:start` -> `runtime start`) on the shared Config,
 * after which a topic's help finds no `runtime:` commands: they get copies.
 */
class CapturingHelp extends Help {
  text = '';
  get sortedCommands() {
    return super.sortedCommands.map((c) => ({ ...c }));
  }
  formatCommand(command) {
    return super.formatCommand({ ...command });
  }
  log(...args) {
    this.text += args.join(' ') + '\n';
  }
}
process.env.OCLIF_COLUMNS = '80';
const config = await Config.load({ root });
const help = {};
const render = async (argv) => {
  const h = new CapturingHelp(config, { maxWidth: 80, stripAnsi: true });
  await h.showHelp(argv);
  return h.text;
};
help[''] = await render([]);
for (const cmd of config.commands) {
  if (cmd.hidden) continue;
  help[cmd.id] = await render([...cmd.id.split(':')]);
}
for (const topic of config.topics) {
  if (!(topic.name in help)) help[topic.name] = await render([...topic.name.split(':')]);
}
await writeFile(path.join(root, 'dist', 'help.json'), JSON.stringify(help) + '\n');
console.log(`wrote oclif.manifest.json with ${Object.keys(plugin.manifest.commands).length} commands and dist/help.json`);
