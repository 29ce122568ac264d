// Generates one roff man page per command into man/ from the commands' own
// metadata (the oclif manifest built by `npm run build`), plus klet.1.
// Never edit man/*.1 by hand: run `npm run man`.
import { Config } from '@oclif/core';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const config = await Config.load({ root });
const outDir = path.join(root, 'man');
const date = process.env.SOURCE_DATE_EPOCH
  ? new Date(Number(process.env.SOURCE_DATE_EPOCH) * 1000)
  : new Date('2026-01-01T00:00:00Z');
const month = date.toISOString().slice(0, 7);

/** Escape text for roff: backslashes, leading dots and apostrophes, hyphens. */
function esc(s) {
  return String(s ?? '')
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .split('\n')
    .map((l) => (/^[.']/.test(l) ? '\\&' + l : l))
    .join('\n');
}

function template(s, id) {
  return s.replace(/<%=\s*config\.bin\s*%>/g, 'klet').replace(/<%=\s*command\.id\s*%>/g, id.replaceAll(':', ' '));
}

function flagSynopsis(name, f) {
  const short = f.char ? `-${f.char}, ` : '';
  const value = f.type === 'option' ? (f.options ? ` ${f.options.join('|')}` : ' VALUE') : '';
  return `${short}--${name}${value}`;
}

function page(cmd) {
  const id = cmd.id;
  const words = id.replaceAll(':', ' ');
  const name = `klet-${id.replaceAll(':', '-')}`;
  const lines = [];
  lines.push(`.TH ${name.toUpperCase().replace(/-/g, '\\-')} 1 "${month}" "klet ${config.version}" "klet manual"`);
  lines.push('.SH NAME', `${esc(name)} \\- ${esc(cmd.summary ?? '')}`);
  const args = Object.values(cmd.args ?? {});
  const argSyn = args.map((a) => (a.required ? a.name.toUpperCase() : `[${a.name.toUpperCase()}]`)).join(' ');
  lines.push('.SH SYNOPSIS', `.B klet ${esc(words)}`, `[\\fIOPTIONS\\fR] ${esc(argSyn)}`.trimEnd());
  lines.push('.SH DESCRIPTION', esc(cmd.summary ?? ''));
  if (cmd.description) lines.push('.PP', esc(template(cmd.description, id)));
  if (args.length > 0) {
    lines.push('.SH ARGUMENTS');
    for (const a of args) lines.push('.TP', `.B ${esc(a.name.toUpperCase())}`, esc(a.description ?? ''));
  }
  const flags = Object.entries(cmd.flags ?? {});
  const own = flags.filter(([, f]) => f.helpGroup !== 'GLOBAL');
  const global = flags.filter(([, f]) => f.helpGroup === 'GLOBAL');
  for (const [title, list] of [
    ['OPTIONS', own],
    ['GLOBAL OPTIONS', global],
  ]) {
    if (list.length === 0) continue;
    lines.push(`.SH ${title}`);
    for (const [fname, f] of list) {
      lines.push('.TP', `.B ${esc(flagSynopsis(fname, f))}`);
      let text = f.summary ?? f.description ?? '';
      if (f.default !== undefined && f.default !== false) text += ` Default: ${f.default}.`;
      if (f.env) text += ` Environment: ${f.env}.`;
      lines.push(esc(text.trim()));
    }
  }
  const examples = (cmd.examples ?? []).map((e) => (typeof e === 'string' ? e : e.command));
  if (examples.length > 0) {
    lines.push('.SH EXAMPLES');
    for (const e of examples) lines.push('.PP', '.nf', `.RS 4`, esc(template(e, id)), '.RE', '.fi');
  }
  lines.push('.SH EXIT STATUS', '0 on success; 1 on failure; 2 on bad input (a flag, argument, file or field), naming the input; 3 for a capability not implemented yet.');
  lines.push('.SH SEE ALSO', '.BR klet (1)');
  return { name, text: lines.join('\n') + '\n' };
}

await mkdir(outDir, { recursive: true });
for (const f of await readdir(outDir)) if (f.endsWith('.1')) await rm(path.join(outDir, f));
const commands = [...config.commands].filter((c) => !c.hidden && !(c.aliases ?? []).includes(c.id)).sort((a, b) => a.id.localeCompare(b.id));
const seen = new Set();
const written = [];
for (const cmd of commands) {
  if (seen.has(cmd.id)) continue;
  seen.add(cmd.id);
  const { name, text } = page(cmd);
  await writeFile(path.join(outDir, `${name}.1`), text);
  written.push({ name, summary: cmd.summary ?? '' });
}
const index = [
  `.TH KLET 1 "${month}" "klet ${config.version}" "klet manual"`,
  '.SH NAME',
  `klet \\- ${esc(config.pjson.description)}`,
  '.SH SYNOPSIS',
  '.B klet',
  '\\fICOMMAND\\fR [\\fIOPTIONS\\fR]',
  '.SH COMMANDS',
  ...written.flatMap((w) => ['.TP', `.BR ${w.name} (1)`, esc(w.summary)]),
  '.SH FILES',
  '.TP',
  '.B /var/lib/klet',
  'Default root dir (\\-\\-root\\-dir): pod dirs, the klet\\-managed containerd, the local API socket.',
  '.TP',
  '.B /var/log/pods',
  'Container logs in the CRI log format, one directory per pod.',
];
await writeFile(path.join(outDir, 'klet.1'), index.join('\n') + '\n');
console.log(`wrote ${written.length + 1} man pages to man/`);
