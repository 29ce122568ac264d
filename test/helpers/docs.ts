/**
 * The user documentation: README.md (the front page), docs/README.md (the
 * index) and every page under docs/, in the order a reader meets them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from './cli.js';

/** README.md, docs/README.md, then the docs pages by name (paths relative to the checkout). */
export function docFiles(): string[] {
  const pages = fs
    .readdirSync(path.join(PROJECT_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md') && f !== 'README.md')
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', 'docs/README.md', ...pages];
}

/** Every documentation file's text, one after another. */
export function docsText(): string {
  return docFiles()
    .map((f) => fs.readFileSync(path.join(PROJECT_ROOT, f), 'utf8'))
    .join('\n');
}
