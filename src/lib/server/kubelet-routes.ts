/**
 * The kubelet server's paths and query parameters, as pure functions
 * (pkg/kubelet/server/server.go): which handler a path names, the
 * PodLogOptions of /containerLogs, and the stream options of /exec and
 * /attach, with the kubelet's answers for what is missing or malformed.
 */

export type KubeletRoute =
  | { kind: 'healthz' }
  | { kind: 'pods' }
  | { kind: 'runningpods' }
  | { kind: 'configz' }
  | { kind: 'metrics'; which: 'all' | 'probes' | 'resource' }
  | { kind: 'statsSummary' }
  | { kind: 'containerLogs'; namespace: string; pod: string; container: string }
  | { kind: 'exec' | 'attach' | 'run'; namespace: string; pod: string; uid?: string; container: string }
  | { kind: 'portForward'; namespace: string; pod: string; uid?: string }
  /** /logs/<path>: the node's log files; `path` decoded, '' for the directory itself, a trailing slash kept. */
  | { kind: 'logs'; path: string }
  /** /logs without its slash: redirected to /logs/. */
  | { kind: 'logsRoot' }
  | { kind: 'notFound' };

/** The path's segments, percent-decoded; null when one does not decode or names `.`/`..` (never a pod or container name). */
function segments(path: string): string[] | null {
  const out: string[] = [];
  for (const raw of path.split('/').slice(1)) {
    let s: string;
    try {
      s = decodeURIComponent(raw);
    } catch {
      return null;
    }
    if (s === '.' || s === '..' || s.includes('/')) return null;
    out.push(s);
  }
  return out;
}

/** Which handler serves `path` (without the query). */
export function routeOf(path: string): KubeletRoute {
  const notFound = { kind: 'notFound' } as const;
  // /logs/…: the rest of the path as it is (Go's StripPrefix("/logs/")); "/logs" alone is redirected to "/logs/" (the kubelet's mux).
  if (path === '/logs') return { kind: 'logsRoot' };
  if (path.startsWith('/logs/')) {
    const rest = segments(path.slice('/logs'.length));
    return rest === null || rest.slice(0, -1).includes('') ? notFound : { kind: 'logs', path: rest.join('/') };
  }
  const s = segments(path);
  if (s === null) return notFound;
  // A trailing slash is the same path ("/pods/" as "/pods").
  if (s.length > 1 && s.at(-1) === '') s.pop();
  const [first, ...rest] = s;
  switch (first) {
    case 'healthz':
      return rest.length === 0 ? { kind: 'healthz' } : notFound;
    case 'pods':
      return rest.length === 0 ? { kind: 'pods' } : notFound;
    case 'runningpods':
      return rest.length === 0 ? { kind: 'runningpods' } : notFound;
    case 'configz':
      return rest.length === 0 ? { kind: 'configz' } : notFound;
    case 'metrics':
      if (rest.length === 0) return { kind: 'metrics', which: 'all' };
      if (rest.length === 1 && (rest[0] === 'probes' || rest[0] === 'resource')) return { kind: 'metrics', which: rest[0] };
      return notFound;
    case 'stats':
      return rest.length === 1 && rest[0] === 'summary' ? { kind: 'statsSummary' } : notFound;
    case 'containerLogs':
      // Empty segments reach the handler, which names what is missing (as the kubelet does).
      if (rest.length !== 3) return notFound;
      return { kind: 'containerLogs', namespace: rest[0]!, pod: rest[1]!, container: rest[2]! };
    case 'exec':
    case 'attach':
    case 'run':
      if (rest.length === 3) return { kind: first, namespace: rest[0]!, pod: rest[1]!, container: rest[2]! };
      if (rest.length === 4) return { kind: first, namespace: rest[0]!, pod: rest[1]!, uid: rest[2]!, container: rest[3]! };
      return notFound;
    case 'portForward':
      if (rest.length === 2) return { kind: 'portForward', namespace: rest[0]!, pod: rest[1]! };
      if (rest.length === 3) return { kind: 'portForward', namespace: rest[0]!, pod: rest[1]!, uid: rest[2]! };
      return notFound;
    default:
      return notFound;
  }
}

/** What /containerLogs reads: v1.PodLogOptions as the kubelet decodes them. */
export interface LogQuery {
  follow: boolean;
  previous: boolean;
  timestamps: boolean;
  tailLines?: number;
  limitBytes?: number;
  sinceSeconds?: number;
  sinceTime?: Date;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; status: 400 | 422; message: string };

/** The kubelet's messages (JSON-looking text, as it writes them). */
export const LOG_QUERY_UNDECODABLE = '{"message": "Unable to decode query."}';
export const LOG_QUERY_INVALID = '{"message": "Invalid request."}';

/** A query boolean as apimachinery converts it: "false" and "0" (any case) are false, any other value true. */
function queryBool(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  return v !== null && !['false', '0'].includes(v.toLowerCase());
}

/** A query int64: absent is undefined, anything but an integer fails. */
function queryInt(q: URLSearchParams, name: string): number | undefined | null {
  const v = q.get(name);
  if (v === null) return undefined;
  if (!/^[+-]?\d{1,18}$/.test(v)) return null;
  return Number(v);
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** /containerLogs' query: 400 when a value does not decode, 422 when the options are invalid (ValidatePodLogOptions). */
export function parseLogQuery(q: URLSearchParams): Parsed<LogQuery> {
  const params = new URLSearchParams(q);
  // The legacy "tail" parameter ("all" is the same as none).
  const tail = params.get('tail');
  if (tail !== null && tail !== '') {
    if (tail === 'all') params.delete('tailLines');
    else params.set('tailLines', tail);
  }
  const undecodable = { ok: false, status: 400, message: LOG_QUERY_UNDECODABLE } as const;
  const tailLines = queryInt(params, 'tailLines');
  const limitBytes = queryInt(params, 'limitBytes');
  const sinceSeconds = queryInt(params, 'sinceSeconds');
  if (tailLines === null || limitBytes === null || sinceSeconds === null) return undecodable;
  let sinceTime: Date | undefined;
  const st = params.get('sinceTime');
  if (st !== null) {
    if (!RFC3339.test(st) || Number.isNaN(Date.parse(st))) return undecodable;
    sinceTime = new Date(st);
  }
  const stream = params.get('stream');
  if (stream !== null && stream !== 'All') {
    // PodLogsQuerySplitStreams is off by default in 1.34: the kubelet refuses another stream.
    return { ok: false, status: 400, message: `unable to return the given log stream: "${stream}". Please enable PodLogsQuerySplitStreams feature gate in kubelet` };
  }
  const invalid = { ok: false, status: 422, message: LOG_QUERY_INVALID } as const;
  if (tailLines !== undefined && tailLines < 0) return invalid;
  if (limitBytes !== undefined && limitBytes < 1) return invalid;
  if (sinceSeconds !== undefined && sinceSeconds < 1) return invalid;
  if (sinceSeconds !== undefined && sinceTime !== undefined) return invalid;
  return {
    ok: true,
    value: {
      follow: queryBool(params, 'follow'),
      previous: queryBool(params, 'previous'),
      timestamps: queryBool(params, 'timestamps'),
      ...(tailLines !== undefined ? { tailLines } : {}),
      ...(limitBytes !== undefined ? { limitBytes } : {}),
      ...(sinceSeconds !== undefined ? { sinceSeconds } : {}),
      ...(sinceTime !== undefined ? { sinceTime } : {}),
    },
  };
}

export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** /exec and /attach's stream options (remotecommand NewOptions): "1" means yes; a TTY has no separate stderr. */
export function parseStreamOptions(q: URLSearchParams): Parsed<StreamOptions> {
  const on = (name: string) => q.get(name) === '1';
  const tty = on('tty');
  const o = { stdin: on('input'), stdout: on('output'), stderr: on('error') && !tty, tty };
  if (!o.stdin && !o.stdout && !o.stderr) return { ok: false, status: 400, message: 'you must specify at least 1 of stdin, stdout, stderr' };
  return { ok: true, value: o };
}

/** /portForward's ports: required on a WebSocket request (portforward.NewV4Options), read from the SPDY streams otherwise. */
export function parsePortForwardPorts(q: URLSearchParams, websocket: boolean): Parsed<number[]> {
  if (!websocket) return { ok: true, value: [] };
  const values = q.getAll('port');
  if (values.length === 0) return { ok: false, status: 400, message: 'query parameter "port" is required' };
  const ports: number[] = [];
  for (const v of values) {
    if (v === '') return { ok: false, status: 400, message: 'query parameter "port" cannot be empty' };
    for (const p of v.split(',')) {
      if (!/^\d{1,5}$/.test(p) || Number(p) > 65535) return { ok: false, status: 400, message: `unable to parse "${v}" as a port` };
      if (Number(p) < 1) return { ok: false, status: 400, message: `port "${v}" must be > 0` };
      ports.push(Number(p));
    }
  }
  return { ok: true, value: ports };
}

/** The kubelet server's root paths: the `path` label of its request metrics takes only these. */
const METRIC_PATHS = new Set([
  'healthz',
  'pods',
  'runningpods',
  'configz',
  'metrics',
  'metrics/probes',
  'metrics/cadvisor',
  'metrics/resource',
  'containerLogs',
  'exec',
  'attach',
  'run',
  'portForward',
  'stats',
  'logs',
  'checkpoint',
  'debug',
]);

/** The `path` label of kubelet_http_requests_total: the path's first segment when it is one of the server's, else "other" (a client cannot grow the label set). */
export function metricPathLabel(path: string): string {
  const [first = '', second] = path.split('/').slice(1);
  // The kubelet's getURLRootPath: /metrics/X is its own bucket.
  const root = first === 'metrics' && second !== undefined ? `metrics/${second}` : first;
  return METRIC_PATHS.has(root) ? root : 'other';
}
