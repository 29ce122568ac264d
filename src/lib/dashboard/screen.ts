/**
 * The dashboard's screen as lines of styled text, for a given snapshot,
 * view and terminal size: pure, so the TUI (ink draws one Text per line),
 * the plain snapshot of a non-TTY run and the tests all read the same
 * layout. Every line is cut to the width, and the number of lines never
 * exceeds the height, so a small terminal gets a smaller screen, never a
 * garbled one. Below 60 columns or 16 rows the compact view shows only what
 * matters most: the connection, the pods and their status.
 */
import type { V1Container, V1ContainerState, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { humanDuration } from '../status/format.js';
import type { SyncLoopTrigger } from '../events/types.js';
import type { ClusterStatus } from '../server/node-status.js';
import type { DashboardSnapshot, EventTone, PodRow } from './store.js';
import { TRIGGERS } from './store.js';
import { KEY_HELP, selectedIndex, visiblePods, type ViewState } from './view.js';

export type Color = 'red' | 'yellow' | 'green' | 'cyan' | 'magenta' | 'gray' | 'blue';

export interface Segment {
  text: string;
  color?: Color;
  bold?: boolean;
  inverse?: boolean;
}

export type Line = Segment[];

export interface Size {
  columns: number;
  rows: number;
}

/** Below this many columns or rows the compact view is used. */
export const COMPACT_COLUMNS = 60;
export const COMPACT_ROWS = 16;

const SPARK = '▁▂▃▄▅▆▇█';
const TRIGGER_LABEL: Record<SyncLoopTrigger, string> = { config: 'config', pleg: 'pleg', sync: 'sync', housekeeping: 'house', probe: 'probe' };
const TONE_COLOR: Record<EventTone, Color | undefined> = { normal: undefined, warning: 'yellow', pleg: 'cyan', lifecycle: 'blue', error: 'red' };

/** `text` cut or padded to exactly `width` characters (an ellipsis marks a cut). */
export function fit(text: string, width: number): string {
  if (width <= 0) return '';
  if (text.length <= width) return text.padEnd(width);
  return width === 1 ? '…' : text.slice(0, width - 1) + '…';
}

/** A line cut to `width` characters in total. */
export function clip(line: Line, width: number): Line {
  const out: Line = [];
  let left = width;
  for (const seg of line) {
    if (left <= 0) break;
    if (seg.text.length <= left) {
      out.push(seg);
      left -= seg.text.length;
    } else {
      out.push({ ...seg, text: seg.text.slice(0, Math.max(0, left - 1)) + '…' });
      left = 0;
    }
  }
  return out;
}

export function lineText(line: Line): string {
  return line.map((s) => s.text).join('');
}

function plain(text: string, style: Omit<Segment, 'text'> = {}): Line {
  return [{ text, ...style }];
}

function ago(iso: string | null, now: number): string {
  if (iso === null) return 'never';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '?' : `${humanDuration(now - t)} ago`;
}

function statusColor(status: string): Color | undefined {
  if (/BackOff|Err|Error|Failed|OOMKilled|Unknown|NoRecord/.test(status)) return 'red';
  if (/Pending|Init|Creating|Terminating|Completed|NotReady/.test(status)) return 'yellow';
  if (status === 'Running') return 'green';
  return undefined;
}

/** Seconds left until `at`, as the countdown reads it ("7s", "4m59s"). */
export function countdown(at: number, now: number): string {
  const s = Math.max(0, Math.ceil((at - now) / 1000));
  return s < 120 ? `${s}s` : `${Math.floor(s / 60)}m${s % 60 === 0 ? '' : `${s % 60}s`}`;
}

/** The STATUS cell: kubectl's status, with the time to the next restart of a container in back-off. */
export function statusCell(row: PodRow, snap: Pick<DashboardSnapshot, 'retryAt' | 'now'>): string {
  if (!/BackOff/.test(row.status)) return row.status;
  const byContainer = snap.retryAt.get(row.key);
  if (byContainer === undefined || byContainer.size === 0) return row.status;
  const next = Math.min(...byContainer.values());
  return `${row.status} ${countdown(next, snap.now)}`;
}

function ageCell(row: PodRow, now: number): string {
  return row.createdAt === null ? '<unknown>' : humanDuration(now - row.createdAt);
}

// ---------------------------------------------------------------------------
// header

function connectionLine(snap: DashboardSnapshot): Line | null {
  const c = snap.connection;
  if (c.state === 'live') return null;
  if (c.state === 'connecting') return plain(c.message, { color: 'yellow' });
  return plain(c.message, { color: 'red', bold: true });
}

/** Cluster mode: the API server and how fresh the node's Lease is (stale past its 40 s duration). */
function clusterLine(c: ClusterStatus, now: number): Line {
  const line: Line = [{ text: 'API server ' }, { text: c.server, bold: true }];
  if (!c.registered) line.push({ text: ' · not registered', color: 'red' });
  else if (c.lease.renewTime === null) line.push({ text: ' · no lease yet', color: 'yellow' });
  else {
    const ageS = Math.max(0, Math.round((now - Date.parse(c.lease.renewTime)) / 1000));
    line.push({ text: ` · lease ${ageS}s ago`, color: ageS > 40 ? 'red' : 'green' });
  }
  if (c.watch.state !== 'watching') line.push({ text: ` · watch ${c.watch.state}`, color: 'yellow' });
  // The last error only while it is news: not once the lease was renewed after it.
  if (c.lastError !== null && (c.lease.renewTime === null || Date.parse(c.lastError.at) > Date.parse(c.lease.renewTime))) {
    line.push({ text: ` · ${c.lastError.message}`, color: 'red' });
  }
  return line;
}

function headerLines(snap: DashboardSnapshot, width: number): Line[] {
  const n = snap.node;
  const lines: Line[] = [];
  const first: Line = [{ text: 'klet ', bold: true }];
  if (n === null) {
    first.push({ text: 'waiting for klet sync', color: 'gray' });
  } else {
    first.push({ text: `node ${n.nodeName}`, bold: true });
    const rt = n.runtime;
    first.push({ text: ` · ${rt.name || 'runtime?'} ${rt.version}` });
    if (rt.error !== null) first.push({ text: ` ${rt.error}`, color: 'red' });
    for (const c of rt.conditions) first.push({ text: ` ${c.type}${c.status ? '' : `=false${c.reason ? `(${c.reason})` : ''}`}`, color: c.status ? 'green' : 'red' });
    first.push({ text: ` · up ${humanDuration(snap.now - Date.parse(n.startedAt))}` });
  }
  lines.push(first);
  if (n !== null) {
    const second: Line = [];
    const p = n.pleg;
    second.push({ text: 'PLEG ' }, { text: p.healthy ? 'healthy' : 'unhealthy', color: p.healthy ? 'green' : 'red' });
    second.push({ text: ` relist ${p.lastRelistDurationMs.toFixed(1)}ms ${ago(p.lastRelistAt, snap.now)}` });
    if (p.error !== null) second.push({ text: ` ${p.error}`, color: 'red' });
    for (const s of n.sources) {
      second.push({ text: ` · ${s.name} read ${ago(s.lastReadAt, snap.now)}` });
      if (s.errors.length > 0) second.push({ text: ` ${s.errors.length} error${s.errors.length > 1 ? 's' : ''}: ${s.errors[0]}`, color: 'red' });
    }
    lines.push(second);
    if (n.cluster) lines.push(clusterLine(n.cluster, snap.now));
  }
  const conn = connectionLine(snap);
  if (conn !== null) lines.push(conn);
  return lines.map((l) => clip(l, width));
}

// ---------------------------------------------------------------------------
// pods

interface Columns {
  name: number;
  ready: number;
  status: number;
  restarts: number;
  age: number;
  ip: number;
  source: number;
}

function podColumns(width: number, rows: readonly PodRow[]): Columns {
  const ip = width >= 80 ? 15 : 0;
  const source = width >= 100 ? 6 : 0;
  const fixed = 5 + 24 + 12 + 6 + ip + source;
  const gaps = 5 + (ip ? 1 : 0) + (source ? 1 : 0);
  const longest = rows.reduce((m, r) => Math.max(m, r.key.length), 'NAMESPACE/NAME'.length);
  const name = Math.max(10, Math.min(longest, width - fixed - gaps));
  return { name, ready: 5, status: 24, restarts: 12, age: 6, ip, source };
}

function podHeader(c: Columns): string {
  let s = `${fit('NAMESPACE/NAME', c.name)} ${fit('READY', c.ready)} ${fit('STATUS', c.status)} ${fit('RESTARTS', c.restarts)} ${fit('AGE', c.age)}`;
  if (c.ip) s += ` ${fit('IP', c.ip)}`;
  if (c.source) s += ` ${fit('SOURCE', c.source)}`;
  return s;
}

function podLine(row: PodRow, c: Columns, snap: DashboardSnapshot, selected: boolean, width: number): Line {
  const status = statusCell(row, snap);
  const line: Line = [
    { text: `${fit(row.key, c.name)} ${fit(row.ready, c.ready)} ` },
    { text: fit(status, c.status), color: statusColor(row.status) },
    { text: ` ${fit(row.restartsText, c.restarts)} ${fit(ageCell(row, snap.now), c.age)}` },
  ];
  if (c.ip) line.push({ text: ` ${fit(row.ip, c.ip)}` });
  if (c.source) line.push({ text: ` ${fit(row.source, c.source)}` });
  const clipped = clip(line, width);
  return selected ? clipped.map((s) => ({ ...s, inverse: true })) : clipped;
}

/** `height` lines of the pod table (title, header, rows), scrolled so the selection shows. */
function podLines(snap: DashboardSnapshot, view: ViewState, rows: PodRow[], width: number, height: number): Line[] {
  const out: Line[] = [];
  const filter = view.filter === '' ? '' : ` filter "${view.filter}"`;
  out.push(clip([{ text: `PODS ${rows.length}${rows.length !== snap.pods.length ? `/${snap.pods.length}` : ''}`, bold: true }, { text: ` sorted by ${view.sort}${filter}`, color: 'gray' }], width));
  if (height <= 1) return out.slice(0, height);
  const c = podColumns(width, rows);
  out.push(plain(podHeader(c).slice(0, width), { bold: true }));
  const room = height - 2;
  if (rows.length === 0) {
    if (room > 0) out.push(plain(snap.podsAt === null ? 'no pods yet' : view.filter ? 'no pod matches the filter' : 'no pods', { color: 'gray' }));
    return out;
  }
  const sel = selectedIndex(rows, view.selected);
  const start = Math.max(0, Math.min(sel - Math.floor(room / 2), rows.length - room));
  for (const [i, row] of rows.slice(start, start + room).entries()) out.push(podLine(row, c, snap, start + i === sel, width));
  return out;
}

// ---------------------------------------------------------------------------
// sync loop

export function sparkline(series: readonly number[]): string {
  const max = Math.max(1, ...series);
  return series.map((v) => (v === 0 ? ' ' : (SPARK[Math.min(SPARK.length - 1, Math.ceil((v / max) * SPARK.length) - 1)] as string))).join('');
}

function loopLines(snap: DashboardSnapshot, width: number): Line[] {
  const n = snap.node;
  const title: Line = [{ text: 'SYNC LOOP', bold: true }, { text: ` ${snap.loop.total} iterations` }];
  if (n !== null) {
    title.push({ text: ` · pod workers ${n.podWorkers.pending} queued, ${n.podWorkers.running} running` });
    const counts = Object.entries(n.podWorkers.counts).filter(([, v]) => v > 0);
    if (counts.length > 0) title.push({ text: ` (${counts.map(([k, v]) => `${v} ${k}`).join(', ')})`, color: 'gray' });
  }
  if (snap.dropped > 0) title.push({ text: ` · ${snap.dropped} events missed`, color: 'yellow' });
  const perLine = width >= 76 ? 2 : 1;
  const cell = Math.floor(width / perLine) - 1;
  const spark = Math.max(4, Math.min(snap.loop.perSecond.pleg.length, cell - 6 - 7 - 9 - 3));
  const cells: Line[] = TRIGGERS.map((t) => {
    const series = snap.loop.perSecond[t].slice(-spark);
    const last10 = snap.loop.perSecond[t].slice(-10).reduce((a, b) => a + b, 0) / 10;
    const last = snap.loop.lastDurationMs[t];
    return [
      { text: fit(TRIGGER_LABEL[t], 6) },
      { text: fit(sparkline(series), spark), color: 'cyan' },
      { text: ` ${fit(`${last10.toFixed(1)}/s`, 6)} ${fit(last === null ? '-' : `${last.toFixed(1)}ms`, 9)}` },
    ];
  });
  const out: Line[] = [clip(title, width)];
  for (let i = 0; i < cells.length; i += perLine) {
    const line: Line = [];
    for (const [j, c] of cells.slice(i, i + perLine).entries()) {
      if (j > 0) line.push({ text: ' ' });
      line.push(...clip(c, cell));
    }
    out.push(clip(line, width));
  }
  return out;
}

// ---------------------------------------------------------------------------
// events

function eventLines(snap: DashboardSnapshot, width: number, height: number): Line[] {
  const out: Line[] = [plain('EVENTS', { bold: true })];
  const newest = snap.events.slice(-(height - 1)).reverse();
  for (const e of newest) out.push(clip(plain(e.text, { color: TONE_COLOR[e.tone] }), width));
  if (newest.length === 0 && height > 1) out.push(plain('no events yet', { color: 'gray' }));
  return out.slice(0, height);
}

// ---------------------------------------------------------------------------
// detail

function stateText(s: V1ContainerState | undefined): string {
  if (s?.running) return 'Running';
  if (s?.waiting) return `Waiting: ${s.waiting.reason ?? ''}`.trim();
  if (s?.terminated) return `Terminated: ${s.terminated.reason ?? ''}`.trim();
  return '-';
}

function exitCode(cs: V1ContainerStatus | undefined): string {
  const t = cs?.state?.terminated ?? cs?.lastState?.terminated;
  return t === undefined ? '-' : String(t.exitCode);
}

function probeText(c: V1Container): { probe: string; text: string }[] {
  const out: { probe: string; text: string }[] = [];
  for (const [kind, p] of [
    ['liveness', c.livenessProbe],
    ['readiness', c.readinessProbe],
    ['startup', c.startupProbe],
  ] as const) {
    if (p === undefined) continue;
    const how = p.httpGet
      ? `http-get ${p.httpGet.host ?? ''}:${String(p.httpGet.port)}${p.httpGet.path ?? '/'}`
      : p.tcpSocket
        ? `tcp-socket :${String(p.tcpSocket.port)}`
        : p.exec
          ? `exec ${(p.exec.command ?? []).join(' ')}`
          : p.grpc
            ? `grpc :${p.grpc.port}`
            : '?';
    out.push({ probe: kind[0]!.toUpperCase() + kind.slice(1), text: `${kind} ${how} every ${p.periodSeconds ?? 10}s` });
  }
  return out;
}

/** The selected container of the detail view (Tab cycles through them). */
export function detailContainer(pod: V1Pod, index: number): V1Container | undefined {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.length === 0 ? undefined : all[index % all.length];
}

function detailLines(snap: DashboardSnapshot, view: ViewState, row: PodRow | undefined, width: number, height: number): Line[] {
  if (row === undefined) return [plain('the pod is gone', { color: 'yellow' })];
  const pod = row.pod;
  const out: Line[] = [];
  out.push(clip([
    { text: row.key, bold: true },
    { text: ' · ' },
    { text: statusCell(row, snap), color: statusColor(row.status) },
    { text: ` · ready ${row.ready} · IP ${row.ip} · ${row.source} · uid ${row.uid} · age ${ageCell(row, snap.now)}` },
  ], width));
  const statuses = new Map<string, V1ContainerStatus>();
  for (const cs of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) statuses.set(cs.name, cs);
  const containers = [...(pod.spec?.initContainers ?? []).map((c) => ({ c, init: true })), ...(pod.spec?.containers ?? []).map((c) => ({ c, init: false }))];
  const nameW = Math.min(20, Math.max(9, ...containers.map(({ c }) => c.name.length + 2)));
  out.push(plain(`${fit('CONTAINER', nameW)} ${fit('STATE', 31)} ${fit('LAST STATE', 18)} ${fit('EXIT', 4)} ${fit('RESTARTS', 8)} READY`.slice(0, width), { bold: true }));
  const selected = detailContainer(pod, view.container);
  for (const { c, init } of containers) {
    const cs = statuses.get(c.name);
    let state = stateText(cs?.state);
    if (cs?.state?.waiting?.reason === 'CrashLoopBackOff') {
      const at = snap.retryAt.get(row.key)?.get(c.name);
      if (at !== undefined) state += ` ${countdown(at, snap.now)}`;
    }
    const mark = c === selected ? '›' : ' ';
    out.push(clip([
      { text: `${fit(`${mark}${c.name}${init ? '*' : ''}`, nameW)} ` },
      { text: fit(state, 31), color: statusColor(state) },
      { text: ` ${fit(stateText(cs?.lastState), 18)} ${fit(exitCode(cs), 4)} ${fit(String(cs?.restartCount ?? 0), 8)} ${cs?.ready ? 'true' : 'false'}` },
    ], width));
    const waitingMsg = cs?.state?.waiting?.message ?? cs?.state?.terminated?.message;
    if (waitingMsg) out.push(clip(plain(`    ${waitingMsg}`, { color: 'gray' }), width));
    for (const p of probeText(c)) {
      const note = snap.probes.get(`${row.key}/${c.name}/${p.probe}`);
      const result: Segment =
        note === undefined
          ? { text: '' }
          : note.result === 'Failure'
            ? { text: ` · Failure since ${ago(note.time, snap.now)}${note.message ? `: ${note.message}` : ''}`, color: 'red' }
            : { text: ` · ${note.result} since ${ago(note.time, snap.now)}`, color: note.result === 'Success' ? 'green' : 'yellow' };
      out.push(clip([{ text: `    probe ${p.text}` }, result], width));
    }
    for (const m of c.volumeMounts ?? []) {
      const vol = (pod.spec?.volumes ?? []).find((v) => v.name === m.name);
      const kind = vol === undefined ? '?' : (Object.keys(vol).find((k) => k !== 'name') ?? '?');
      const where = vol?.hostPath ? ` ${vol.hostPath.path}` : vol?.configMap ? ` ${vol.configMap.name}` : vol?.secret ? ` ${vol.secret.secretName}` : '';
      out.push(clip(plain(`    mount ${m.mountPath} ← ${m.name} (${kind}${where})${m.readOnly ? ' ro' : ''}`), width));
    }
  }
  const logTitle: Line = [
    { text: `LOG ${selected?.name ?? ''}`, bold: true },
    { text: view.follow ? ' following' : ' (l: follow the log, Tab: next container)', color: 'gray' },
  ];
  if (snap.log.note) logTitle.push({ text: ` ${snap.log.note}`, color: 'yellow' });
  const room = height - out.length - 1;
  if (room <= 0) return out.slice(0, height);
  out.push(clip(logTitle, width));
  if (view.follow) for (const l of snap.log.lines.slice(-(room - 1 > 0 ? room - 1 : 0))) out.push(clip(plain(l), width));
  return out.slice(0, height);
}

// ---------------------------------------------------------------------------
// the screen

function footer(view: ViewState, rows: number, width: number): Line {
  if (view.filterDraft !== null) return clip([{ text: '/', bold: true }, { text: `${view.filterDraft}▏` }, { text: '  Enter apply · Esc cancel', color: 'gray' }], width);
  const keys =
    view.mode === 'detail'
      ? 'Esc back · l log · Tab container · ↑↓ pod · q quit · ? keys'
      : view.mode === 'help'
        ? 'any key: back · q quit'
        : `q quit · ? keys · ↑↓ select · Enter detail · s sort · / filter · ${rows} pods`;
  return clip(plain(keys, { color: 'gray' }), width);
}

function helpLines(width: number, height: number): Line[] {
  const out: Line[] = [plain('KEYS', { bold: true })];
  for (const [k, what] of KEY_HELP) out.push(clip([{ text: fit(k, 12), bold: true }, { text: ` ${what}` }], width));
  return out.slice(0, Math.max(0, height - 1));
}

function compactLines(snap: DashboardSnapshot, view: ViewState, rows: PodRow[], size: Size): Line[] {
  const w = size.columns;
  const out: Line[] = [];
  const n = snap.node;
  out.push(clip([{ text: 'klet ', bold: true }, { text: n ? `${n.nodeName} ${n.pleg.healthy ? 'PLEG ok' : 'PLEG unhealthy'}` : 'waiting', color: n && !n.pleg.healthy ? 'red' : undefined }], w));
  const conn = connectionLine(snap);
  if (conn !== null) out.push(clip(conn, w));
  if (view.mode === 'help') return [...out, ...helpLines(w, size.rows - out.length)].slice(0, size.rows - 1).concat([footer(view, rows.length, w)]);
  const room = size.rows - out.length - 1;
  if (room > 0) {
    const sel = selectedIndex(rows, view.selected);
    const start = Math.max(0, Math.min(sel - Math.floor(room / 2), rows.length - room));
    const statusW = Math.min(24, Math.max(8, w - 16));
    for (const [i, row] of rows.slice(start, start + room).entries()) {
      const status = statusCell(row, snap);
      const line = clip([{ text: `${fit(row.name, w - statusW - 1)} ` }, { text: fit(status, statusW), color: statusColor(row.status) }], w);
      out.push(start + i === sel ? line.map((s) => ({ ...s, inverse: true })) : line);
    }
    if (rows.length === 0) out.push(plain(snap.podsAt === null ? 'no pods yet' : 'no pods', { color: 'gray' }));
  }
  const body = out.slice(0, size.rows - 1);
  body.push(clip(plain(view.filterDraft !== null ? `/${view.filterDraft}▏` : 'q quit · ? keys', { color: 'gray' }), w));
  return body;
}

/** Adjacent segments of the same style as one: fewer nodes for ink to lay out per frame. */
function merge(line: Line): Line {
  const out: Line = [];
  for (const seg of line) {
    const prev = out.at(-1);
    if (prev !== undefined && prev.color === seg.color && prev.bold === seg.bold && prev.inverse === seg.inverse) {
      out[out.length - 1] = { ...prev, text: prev.text + seg.text };
    } else {
      out.push(seg);
    }
  }
  return out;
}

/**
 * Control characters from the outside world (a probe's output ending in a
 * newline, a container's escape sequences) become spaces, one for one, so
 * every line stays exactly one terminal line of the width it was cut to.
 */
function printable(line: Line): Line {
  // eslint-disable-next-line no-control-regex
  return line.map((seg) => (/[\u0000-\u001f\u007f-\u009f]/.test(seg.text) ? { ...seg, text: seg.text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ') } : seg));
}

/** The whole screen: at most `size.rows` lines of at most `size.columns` characters. */
export function renderScreen(snap: DashboardSnapshot, view: ViewState, size: Size): Line[] {
  return layout(snap, view, size).map((line) => merge(printable(line)));
}

function layout(snap: DashboardSnapshot, view: ViewState, size: Size): Line[] {
  const width = Math.max(1, size.columns);
  const height = Math.max(1, size.rows);
  const rows = visiblePods(snap.pods, view);
  if (width < COMPACT_COLUMNS || height < COMPACT_ROWS) {
    if (view.mode === 'detail') {
      const row = rows[selectedIndex(rows, view.selected)] ?? snap.pods.find((p) => p.key === view.selected);
      return [...detailLines(snap, view, row, width, height - 1), footer(view, rows.length, width)];
    }
    return compactLines(snap, view, rows, { columns: width, rows: height });
  }
  const header = headerLines(snap, width);
  const foot = footer(view, rows.length, width);
  const bodyHeight = height - header.length - 1;
  let body: Line[];
  if (view.mode === 'help') {
    body = helpLines(width, bodyHeight);
  } else if (view.mode === 'detail') {
    const row = snap.pods.find((p) => p.key === view.selected);
    body = detailLines(snap, view, row, width, bodyHeight);
  } else {
    const loop = loopLines(snap, width);
    const eventsMin = Math.min(5, Math.max(2, bodyHeight - loop.length - 5));
    // Pods first (up to all of them), then events get the rest.
    const podsWanted = rows.length + 2;
    const podsHeight = Math.max(3, Math.min(podsWanted, bodyHeight - loop.length - eventsMin));
    const eventsHeight = Math.max(0, bodyHeight - podsHeight - loop.length);
    body = [...podLines(snap, view, rows, width, podsHeight), ...loop, ...eventLines(snap, width, eventsHeight)];
  }
  return [...header, ...body.slice(0, bodyHeight), foot].slice(0, height);
}

/** The screen as plain text (no colour, no control characters): the non-TTY snapshot. */
export function screenText(lines: readonly Line[]): string {
  return lines.map((l) => lineText(l).trimEnd()).join('\n') + '\n';
}

/** How tall a plain snapshot must be to show every pod and some events. */
export function snapshotSize(snap: DashboardSnapshot, columns: number): Size {
  return { columns: Math.max(COMPACT_COLUMNS, columns), rows: Math.max(COMPACT_ROWS, snap.pods.length + 3 + 4 + 11 + 1) };
}

/** NO_COLOR (any non-empty value, https://no-color.org) turns colour off. */
export function colorWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.NO_COLOR ?? '') === '';
}
