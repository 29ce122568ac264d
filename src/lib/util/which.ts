import { access, constants } from 'node:fs/promises';
import path from 'node:path';

/** Absolute path of an executable found on PATH (or the given absolute path), or null. */
export async function findExecutable(name: string, envPath = process.env.PATH ?? ''): Promise<string | null> {
  const candidates = name.includes('/') ? [name] : envPath.split(':').filter(Boolean).map((d) => path.join(d, name));
  for (const file of candidates) {
    try {
      await access(file, constants.X_OK);
      return path.resolve(file);
    } catch {
      // not here
    }
  }
  return null;
}
