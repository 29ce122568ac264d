/** Results on stdout in the chosen output format (-o table|json|yaml). */
import { jsonReplacer } from '../lib/util/json.js';

export type OutputFormat = 'table' | 'json' | 'yaml';

/** Write a result to stdout in the chosen format. */
export async function printObject(output: OutputFormat, obj: unknown, table: () => string): Promise<void> {
  if (output === 'json') {
    process.stdout.write(JSON.stringify(obj, jsonReplacer, 2) + '\n');
  } else if (output === 'yaml') {
    // yaml is CommonJS: its module.exports is the import's default export, both
    // in Node and in runonce's bundle (scripts/bundle.js), whose chunk for a
    // dynamically imported CommonJS package exports nothing else.
    const { stringify } = (await import('yaml')).default;
    process.stdout.write(stringify(JSON.parse(JSON.stringify(obj, jsonReplacer))));
  } else {
    const text = table();
    process.stdout.write(text.endsWith('\n') ? text : text + '\n');
  }
}

/** Is stderr a terminal we may draw progress on? */
export function interactiveStderr(output: OutputFormat): boolean {
  return process.stderr.isTTY === true && output !== 'json' && output !== 'yaml';
}
