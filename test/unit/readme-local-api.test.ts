/**
 * The docs' curl commands against the local API (docs/sync-and-local-api.md)
 * do what the docs say:
 * each one returns (a user pasting it gets their prompt back), except the
 * ones marked `# follows`, which stream `/events` and stay open. Run over a
 * real unix socket served by startLocalApi, with the URLs taken from the
 * README and docs/ themselves and from `klet sync --help`'s examples.
 */
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { EventBus } from '../../src/lib/events/index.js';
import { KletMetrics } from '../../src/lib/metrics/index.js';
import { localApiSocketPath, startLocalApi, type LocalApi } from '../../src/lib/server/index.js';
import { PROJECT_ROOT } from '../helpers/cli.js';
import { docsText } from '../helpers/docs.js';

interface ReadmeCurl {
  line: string;
  path: string;
  follows: boolean;
}

const readme = docsText();
/** `klet sync --help` shows some too (its examples, from the sources the build reads). */
const syncSource = fs.readFileSync(path.join(PROJECT_ROOT, 'src', 'commands', 'sync.ts'), 'utf8');
const helpExamples = [...syncSource.matchAll(/^\s*["'](curl [^\n]*)["'],$/gm)].map((m) => m[1] as string).join('\n');
const curls: ReadmeCurl[] = [...`${readme}\n${helpExamples}`.matchAll(/^curl (?:-N )?--unix-socket \/var\/lib\/klet\/klet\.sock '?http:\/\/klet([^'\s]*)'?(.*)$/gm)].map(
  (m) => ({ line: m[0], path: m[1] as string, follows: /#\s*follows/.test(m[2] ?? '') }),
);

let dir = '';
let api: LocalApi | undefined;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'klet-readme-api-'));
});
afterEach(async () => {
  await api?.close();
  api = undefined;
  await rm(dir, { recursive: true, force: true });
});

/** GET `urlPath`: 'ended' with the body when the response ends within `ms`, else 'open' with what arrived. */
function get(socketPath: string, urlPath: string, ms: number): Promise<{ outcome: 'ended' | 'open'; status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: urlPath }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      const timer = setTimeout(() => {
        resolve({ outcome: 'open', status: res.statusCode ?? 0, body });
        req.destroy();
      }, ms);
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ outcome: 'ended', status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
  });
}

it('the docs show curl commands for every route, /events both ways', () => {
  const paths = curls.map((c) => c.path.split('?')[0]);
  expect(new Set(paths)).toEqual(new Set(['/healthz', '/pods', '/node', '/events', '/metrics', '/stats/summary']));
  expect(curls.some((c) => c.path.startsWith('/events') && !c.follows)).toBe(true);
  expect(curls.some((c) => c.path.startsWith('/events') && c.follows)).toBe(true);
});

it('each docs curl command returns, except the ones marked "# follows", which stream /events', async () => {
  const bus = new EventBus();
  bus.emit({ kind: 'PodLifecycle', pod: 'default/web-node', uid: 'u1', state: 'SyncPod' });
  api = await startLocalApi({
    socketPath: localApiSocketPath(dir),
    handlers: {
      healthz: () => ({ ok: true, checks: { runtime: { ok: true, message: 'RuntimeReady' } } }),
      pods: async () => ({ apiVersion: 'v1', kind: 'PodList', items: [] }),
      node: async () => ({
        kind: 'KletNodeStatus',
        nodeName: 'node',
        startedAt: new Date().toISOString(),
        runtime: { name: 'containerd', version: '1.6', conditions: [], error: null },
        sources: [],
        pleg: { healthy: true, message: 'ok', lastRelistAt: null, lastRelistDurationMs: 0, error: null },
        podWorkers: { counts: {}, pending: 0, running: 0 },
        lastEventSeq: bus.lastSeq,
      }),
      plans: () => [],
      events: bus,
      metrics: new KletMetrics({ defaultMetrics: false }),
      summary: async () => ({ node: { nodeName: 'node', startTime: new Date().toISOString() }, pods: [] }),
    },
  });
  for (const c of curls) {
    // A streaming response has sent its retained events long before 2 s.
    const r = await get(api.address.socketPath, c.path, 2_000);
    expect(r.status, c.line).toBe(200);
    expect(r.outcome, c.line).toBe(c.follows ? 'open' : 'ended');
    if (c.path.startsWith('/events') && !c.path.includes('since=')) expect(r.body, c.line).toContain('default/web-node');
  }
});
