/**
 * Human output for pods, matching what kubectl prints so that people who
 * know `kubectl get pods` and `kubectl describe pod` read klet's output
 * without learning anything:
 *
 * - the STATUS column is kubectl's printPod logic (pkg/printers/internalversion),
 *   sidecar (restartable init) containers included;
 * - ages are apimachinery's duration.HumanDuration;
 * - describe output is laid out by a port of Go's text/tabwriter with the
 *   settings kubectl uses, so columns line up the same way.
 *
 * Timestamps may arrive as Date (objects from @kubernetes/client-node's
 * deserializer) or as RFC 3339 strings (objects parsed straight from YAML or
 * JSON); both are accepted everywhere.
 */
import type { ClusterStatus } from '../server/node-status.js';
import type {
  CoreV1Event,
  V1Container,
  V1ContainerPort,
  V1ContainerState,
  V1ContainerStatus,
  V1EnvVar,
  V1Pod,
  V1Probe,
  V1ResourceRequirements,
  V1Toleration,
  V1Volume,
} from '@kubernetes/client-node';
import { isRestartableInit } from '../kuberuntime/actions.js';
import { qosClass } from '../kuberuntime/resources.js';
import { formatTable } from '../util/table.js';

// ---------------------------------------------------------------------------
// Durations

/**
 * k8s.io/apimachinery/pkg/util/duration.HumanDuration: a duration with about
 * two significant figures ("45s", "119s", "3m10s", "70m", "3h1m", "47h",
 * "2d1h", "367d", "2y1d", "8y"). Up to a second of clock skew into the
 * future still reads "0s"; more is "<invalid>".
 */
export function humanDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '<invalid>';
  // Go truncates toward zero (int(d.Seconds())), so -1.9s is -1 and reads "0s".
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.trunc(ms / 60_000);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(ms / 3_600_000);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${days}d` : `${days}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.trunc(days / 365);
  if (hours < 24 * 365 * 8) {
    const dy = days % 365;
    return dy === 0 ? `${years}y` : `${years}y${dy}d`;
  }
  return `${years}y`;
}

/** A Date, from a Date or an RFC 3339 string; null when absent or unparseable. */
function toDate(value: unknown): Date | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value;
  if (typeof value === 'string' && value !== '') {
    const d = new Date(value);
    return Number.isNaN(d.getTime()) ? null : d;
  }
  return null;
}

/** kubectl's translateTimestampSince: the age of a timestamp, "<unknown>" without one. */
function since(value: unknown, now: Date): string {
  const d = toDate(value);
  return d === null ? '<unknown>' : humanDuration(now.getTime() - d.getTime());
}

// ---------------------------------------------------------------------------
// `get pods` table

/** One row of the pod table, by column. */
export interface PodSummary {
  namespace: string;
  name: string;
  /** Ready containers / containers, sidecars included: "1/2". */
  ready: string;
  /** kubectl's STATUS: "Running", "Init:0/2", "CrashLoopBackOff", "Terminating"... */
  status: string;
  /** Restarts, with the age of the last one: "3 (5m ago)". */
  restarts: string;
  age: string;
  /** The first pod IP, or "<none>". */
  ip: string;
}

export const POD_TABLE_HEADERS = ['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP'];

function conditionTrue(pod: V1Pod, type: string): boolean {
  return (pod.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

/**
 * One pod's row, computed the way kubectl's printPod does. The ordering of
 * the checks matters and follows kubectl: the pod reason or phase is the
 * default; an unfinished init container overrides it; once initialized, the
 * first main container with a waiting or terminated reason wins (statuses
 * are walked last to first); a deletion timestamp overrides everything.
 */
export function podSummary(pod: V1Pod, now: Date): PodSummary {
  const status = pod.status ?? {};
  const spec = pod.spec;
  const initContainers = spec?.initContainers ?? [];
  let restarts = 0;
  let restartableInitRestarts = 0;
  let totalContainers = spec?.containers?.length ?? 0;
  let readyContainers = 0;
  // Zero time is null: a restart without finishedAt has no "ago".
  let lastRestart: Date | null = null;
  let lastRestartableInitRestart: Date | null = null;
  const later = (a: Date | null, b: Date | null): Date | null => (b !== null && (a === null || a < b) ? b : a);

  const phase = status.phase ?? '';
  let reason = status.reason !== undefined && status.reason !== '' ? status.reason : phase;
  for (const c of status.conditions ?? []) {
    if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';
  }

  const initByName = new Map<string, V1Container>();
  for (const c of initContainers) {
    initByName.set(c.name, c);
    if (isRestartableInit(c)) totalContainers++;
  }

  let initializing = false;
  const initStatuses = status.initContainerStatuses ?? [];
  for (let i = 0; i < initStatuses.length; i++) {
    const cs = initStatuses[i] as V1ContainerStatus;
    const sidecar = isRestartableInit(initByName.get(cs.name));
    const finished = toDate(cs.lastState?.terminated?.finishedAt);
    restarts += cs.restartCount ?? 0;
    lastRestart = later(lastRestart, finished);
    if (sidecar) {
      restartableInitRestarts += cs.restartCount ?? 0;
      lastRestartableInitRestart = later(lastRestartableInitRestart, finished);
    }
    const terminated = cs.state?.terminated;
    const waiting = cs.state?.waiting;
    if (terminated !== undefined && terminated.exitCode === 0) continue;
    if (sidecar && cs.started === true) {
      if (cs.ready) readyContainers++;
      continue;
    }
    if (terminated !== undefined) {
      // Initialization failed.
      if (terminated.reason === undefined || terminated.reason === '') {
        reason =
          terminated.signal !== undefined && terminated.signal !== 0
            ? `Init:Signal:${terminated.signal}`
            : `Init:ExitCode:${terminated.exitCode}`;
      } else {
        reason = `Init:${terminated.reason}`;
      }
    } else if (waiting?.reason !== undefined && waiting.reason !== '' && waiting.reason !== 'PodInitializing') {
      reason = `Init:${waiting.reason}`;
    } else {
      reason = `Init:${i}/${initContainers.length}`;
    }
    initializing = true;
    break;
  }

  if (!initializing || conditionTrue(pod, 'Initialized')) {
    // Restarts of classic init containers no longer matter once the pod
    // runs; sidecars keep counting.
    restarts = restartableInitRestarts;
    lastRestart = lastRestartableInitRestart;
    let hasRunning = false;
    const statuses = status.containerStatuses ?? [];
    for (let i = statuses.length - 1; i >= 0; i--) {
      const cs = statuses[i] as V1ContainerStatus;
      restarts += cs.restartCount ?? 0;
      lastRestart = later(lastRestart, toDate(cs.lastState?.terminated?.finishedAt));
      const waiting = cs.state?.waiting;
      const terminated = cs.state?.terminated;
      if (waiting?.reason !== undefined && waiting.reason !== '') {
        reason = waiting.reason;
      } else if (terminated?.reason !== undefined && terminated.reason !== '') {
        reason = terminated.reason;
      } else if (terminated !== undefined) {
        reason =
          terminated.signal !== undefined && terminated.signal !== 0
            ? `Signal:${terminated.signal}`
            : `ExitCode:${terminated.exitCode}`;
      } else if (cs.ready && cs.state?.running !== undefined) {
        hasRunning = true;
        readyContainers++;
      }
    }
    // A pod whose last-listed container completed while another still runs
    // is not "Completed".
    if (reason === 'Completed' && hasRunning) reason = conditionTrue(pod, 'Ready') ? 'Running' : 'NotReady';
  }

  const deleting = toDate(pod.metadata?.deletionTimestamp) !== null;
  if (deleting && status.reason === 'NodeLost') reason = 'Unknown';
  else if (deleting && phase !== 'Succeeded' && phase !== 'Failed') reason = 'Terminating';

  const restartsText =
    restarts !== 0 && lastRestart !== null ? `${restarts} (${humanDuration(now.getTime() - lastRestart.getTime())} ago)` : String(restarts);
  const ip = status.podIPs?.[0]?.ip || status.podIP || '<none>';
  return {
    namespace: pod.metadata?.namespace ?? 'default',
    name: pod.metadata?.name ?? '',
    ready: `${readyContainers}/${totalContainers}`,
    status: reason,
    restarts: restartsText,
    age: since(pod.metadata?.creationTimestamp, now),
    ip,
  };
}

/** Rows for POD_TABLE_HEADERS, in the order given. */
export function podTableRows(pods: V1Pod[], now: Date): string[][] {
  return pods.map((pod) => {
    const s = podSummary(pod, now);
    return [s.namespace, s.name, s.ready, s.status, s.restarts, s.age, s.ip];
  });
}

/**
 * The pod table as `kubectl get pods -A -o wide` prints its first columns,
 * sorted by namespace and name as the API server lists them.
 */
export function formatPodTable(pods: V1Pod[], now: Date): string {
  const key = (p: V1Pod): string => `${p.metadata?.namespace ?? 'default'}\u0000${p.metadata?.name ?? ''}`;
  const sorted = [...pods].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return formatTable(POD_TABLE_HEADERS, podTableRows(sorted, now));
}

// ---------------------------------------------------------------------------
// `describe pod`

export interface DescribePodOptions {
  /** The time ages are measured from; now by default. */
  now?: Date;
  /** Print times in UTC instead of the local time zone (kubectl uses local). */
  utc?: boolean;
}

/**
 * A `kubectl describe pod`-like report: metadata, status, each init and
 * main container (image, ports, command, state, last state, readiness,
 * restarts, resources, probes, environment, mounts), conditions, volumes,
 * QoS class, node selectors, tolerations, and, when `events` is given (even
 * empty), the events table. Sections and field names are kubectl's; values
 * kubectl would fetch from the API server (ConfigMap and Secret contents,
 * node allocatable) are described instead.
 */
export function describePod(pod: V1Pod, events?: CoreV1Event[], opts: DescribePodOptions = {}): string {
  const now = opts.now ?? new Date();
  const time = (value: unknown): string => {
    const d = toDate(value);
    return d === null ? '<unknown>' : rfc1123z(d, opts.utc === true);
  };
  const w = new PrefixWriter();
  const meta = pod.metadata ?? {};
  const spec = pod.spec;
  const status = pod.status ?? {};

  w.write(0, 'Name:\t%s', meta.name ?? '');
  w.write(0, 'Namespace:\t%s', meta.namespace ?? 'default');
  if (spec?.priority !== undefined) w.write(0, 'Priority:\t%s', String(spec.priority));
  if (spec?.priorityClassName) w.write(0, 'Priority Class Name:\t%s', spec.priorityClassName);
  if (spec?.runtimeClassName) w.write(0, 'Runtime Class Name:\t%s', spec.runtimeClassName);
  w.write(0, 'Service Account:\t%s', spec?.serviceAccountName ?? '');
  w.write(0, 'Node:\t%s', spec?.nodeName ? `${spec.nodeName}/${status.hostIP ?? ''}` : '<none>');
  if (toDate(status.startTime) !== null) w.write(0, 'Start Time:\t%s', time(status.startTime));
  writeMap(w, 'Labels', meta.labels, (k, v) => `${k}=${v}`);
  const annotations = { ...(meta.annotations ?? {}) };
  delete annotations['kubectl.kubernetes.io/last-applied-configuration'];
  writeMap(w, 'Annotations', annotations, (k, v) => `${k}: ${v}`);

  const phase = status.phase ?? '';
  if (toDate(meta.deletionTimestamp) !== null && phase !== 'Failed' && phase !== 'Succeeded') {
    w.write(0, 'Status:\tTerminating (lasts %s)', since(meta.deletionTimestamp, now));
    if (meta.deletionGracePeriodSeconds !== undefined) {
      w.write(0, 'Termination Grace Period:\t%ss', String(meta.deletionGracePeriodSeconds));
    }
  } else {
    w.write(0, 'Status:\t%s', phase);
  }
  if (status.reason) w.write(0, 'Reason:\t%s', status.reason);
  if (status.message) w.write(0, 'Message:\t%s', status.message.trim());
  w.write(0, 'IP:\t%s', status.podIP ?? '');
  const ips = status.podIPs ?? [];
  if (ips.length === 0) {
    w.write(0, 'IPs:\t<none>');
  } else {
    w.write(0, 'IPs:');
    for (const ip of ips) w.write(1, 'IP:\t%s', ip.ip);
  }
  const controller = (meta.ownerReferences ?? []).find((o) => o.controller === true);
  if (controller !== undefined) w.write(0, 'Controlled By:\t%s', `${controller.kind}/${controller.name}`);
  if (status.nominatedNodeName) w.write(0, 'NominatedNodeName:\t%s', status.nominatedNodeName);

  if ((spec?.initContainers ?? []).length > 0) {
    describeContainers(w, 'Init Containers', spec?.initContainers ?? [], status.initContainerStatuses ?? [], pod, time);
  }
  describeContainers(w, 'Containers', spec?.containers ?? [], status.containerStatuses ?? [], pod, time);

  const conditions = status.conditions ?? [];
  if (conditions.length > 0) {
    w.write(0, 'Conditions:');
    w.write(1, 'Type\tStatus');
    // kubectl's "%v \t%v \n": the extra space widens the column by one.
    for (const c of conditions) w.write(1, '%s \t%s', c.type, c.status);
  }
  describeVolumes(w, spec?.volumes ?? []);
  w.write(0, 'QoS Class:\t%s', status.qosClass ?? qosClass(pod));
  writeMap(w, 'Node-Selectors', spec?.nodeSelector, (k, v) => `${k}=${v}`);
  writeTolerations(w, spec?.tolerations ?? []);

  if (events !== undefined) describeEvents(w, events, now);
  return w.toString();
}

/** RFC 1123 with a numeric zone, Go's time.RFC1123Z: "Mon, 02 Jan 2006 15:04:05 -0700". */
function rfc1123z(d: Date, utc: boolean): string {
  const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const offsetMin = utc ? 0 : -d.getTimezoneOffset();
  const t = new Date(d.getTime() + offsetMin * 60_000); // read with UTC getters
  const p2 = (n: number): string => String(n).padStart(2, '0');
  const abs = Math.abs(offsetMin);
  return (
    `${DAYS[t.getUTCDay()]}, ${p2(t.getUTCDate())} ${MONTHS[t.getUTCMonth()]} ${t.getUTCFullYear()} ` +
    `${p2(t.getUTCHours())}:${p2(t.getUTCMinutes())}:${p2(t.getUTCSeconds())} ` +
    `${offsetMin < 0 ? '-' : '+'}${p2(Math.trunc(abs / 60))}${p2(abs % 60)}`
  );
}

/** kubectl's printLabelsMultiline: first entry beside the title, the rest aligned under it. */
function writeMap(
  w: PrefixWriter,
  title: string,
  map: Record<string, string> | undefined,
  entry: (k: string, v: string) => string,
): void {
  const keys = Object.keys(map ?? {}).sort();
  if (keys.length === 0) {
    w.write(0, `${title}:\t<none>`);
    return;
  }
  keys.forEach((k, i) => {
    const lines = entry(k, (map as Record<string, string>)[k] ?? '').split('\n');
    lines.forEach((line, j) => w.write(0, i === 0 && j === 0 ? `${title}:\t%s` : '\t%s', j === 0 ? line : `  ${line}`));
  });
}

function describeContainers(
  w: PrefixWriter,
  label: string,
  containers: V1Container[],
  statuses: V1ContainerStatus[],
  pod: V1Pod,
  time: (value: unknown) => string,
): void {
  w.write(0, `${label}:`);
  const byName = new Map(statuses.map((s) => [s.name, s]));
  for (const c of containers) {
    const st = byName.get(c.name);
    w.write(1, '%s:', c.name);
    if (st !== undefined) w.write(2, 'Container ID:\t%s', st.containerID ?? '');
    w.write(2, 'Image:\t%s', c.image ?? '');
    if (st !== undefined) w.write(2, 'Image ID:\t%s', st.imageID ?? '');
    writePorts(w, c.ports ?? []);
    if (c.restartPolicy) w.write(2, 'Restart Policy:\t%s', c.restartPolicy);
    for (const [title, list] of [
      ['Command', c.command],
      ['Args', c.args],
    ] as const) {
      if (list === undefined || list.length === 0) continue;
      w.write(2, `${title}:`);
      for (const arg of list) for (const line of arg.split('\n')) w.write(3, '%s', line);
    }
    if (st !== undefined) {
      writeState(w, 'State', st.state, time);
      if (st.lastState?.terminated !== undefined) writeState(w, 'Last State', st.lastState, time);
      w.write(2, 'Ready:\t%s', st.ready ? 'True' : 'False');
      w.write(2, 'Restart Count:\t%s', String(st.restartCount ?? 0));
    }
    writeResources(w, c.resources);
    for (const [title, probe] of [
      ['Liveness', c.livenessProbe],
      ['Readiness', c.readinessProbe],
      ['Startup', c.startupProbe],
    ] as const) {
      if (probe !== undefined) w.write(2, `${title}:\t%s`, describeProbe(probe));
    }
    writeEnv(w, c, pod);
    const mounts = [...(c.volumeMounts ?? [])].sort((a, b) => (a.mountPath < b.mountPath ? -1 : a.mountPath > b.mountPath ? 1 : 0));
    w.write(2, mounts.length === 0 ? 'Mounts:\t<none>' : 'Mounts:');
    for (const m of mounts) {
      const flags = [m.readOnly === true ? 'ro' : 'rw'];
      if (m.subPath) flags.push(`path=${JSON.stringify(m.subPath)}`);
      w.write(3, '%s from %s (%s)', m.mountPath, m.name, flags.join(','));
    }
  }
}

function writePorts(w: PrefixWriter, ports: V1ContainerPort[]): void {
  const proto = (p: V1ContainerPort): string => p.protocol ?? 'TCP';
  const list = ports.map((p) => `${p.containerPort}/${proto(p)}`).join(', ');
  const hostList = ports.map((p) => `${p.hostPort ?? 0}/${proto(p)}`).join(', ');
  if (ports.length > 1) {
    w.write(2, 'Ports:\t%s', list);
    w.write(2, 'Host Ports:\t%s', hostList);
  } else {
    w.write(2, 'Port:\t%s', list || '<none>');
    w.write(2, 'Host Port:\t%s', hostList || '<none>');
  }
}

/** kubectl's describeStatus. */
function writeState(w: PrefixWriter, title: string, state: V1ContainerState | undefined, time: (v: unknown) => string): void {
  if (state?.running !== undefined) {
    w.write(2, `${title}:\tRunning`);
    w.write(3, 'Started:\t%s', time(state.running.startedAt));
  } else if (state?.waiting !== undefined) {
    w.write(2, `${title}:\tWaiting`);
    if (state.waiting.reason) w.write(3, 'Reason:\t%s', state.waiting.reason);
    if (state.waiting.message) w.write(3, 'Message:\t%s', state.waiting.message);
  } else if (state?.terminated !== undefined) {
    const t = state.terminated;
    w.write(2, `${title}:\tTerminated`);
    if (t.reason) w.write(3, 'Reason:\t%s', t.reason);
    if (t.message) w.write(3, 'Message:\t%s', t.message.trim());
    w.write(3, 'Exit Code:\t%s', String(t.exitCode));
    if (t.signal !== undefined && t.signal > 0) w.write(3, 'Signal:\t%s', String(t.signal));
    w.write(3, 'Started:\t%s', time(t.startedAt));
    w.write(3, 'Finished:\t%s', time(t.finishedAt));
  } else {
    w.write(2, `${title}:\tWaiting`);
  }
}

function writeResources(w: PrefixWriter, resources: V1ResourceRequirements | undefined): void {
  for (const [title, list] of [
    ['Limits', resources?.limits],
    ['Requests', resources?.requests],
  ] as const) {
    const names = Object.keys(list ?? {}).sort();
    if (names.length === 0) continue;
    w.write(2, `${title}:`);
    for (const n of names) w.write(3, '%s:\t%s', n, String((list as Record<string, unknown>)[n]));
  }
}

/** kubectl's DescribeProbe, with the API server's defaults for unset fields. */
export function describeProbe(probe: V1Probe): string {
  const attrs =
    `delay=${probe.initialDelaySeconds ?? 0}s timeout=${probe.timeoutSeconds ?? 1}s ` +
    `period=${probe.periodSeconds ?? 10}s #success=${probe.successThreshold ?? 1} #failure=${probe.failureThreshold ?? 3}`;
  if (probe.exec !== undefined) return `exec [${(probe.exec.command ?? []).join(' ')}] ${attrs}`;
  if (probe.httpGet !== undefined) {
    const g = probe.httpGet;
    const host = g.host ?? '';
    const port = String(g.port);
    const hostPort = port === '' ? host : `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const path = g.path === undefined || g.path === '' || g.path.startsWith('/') ? (g.path ?? '') : `/${g.path}`;
    return `http-get ${(g.scheme ?? 'HTTP').toLowerCase()}://${hostPort}${path} ${attrs}`;
  }
  if (probe.tcpSocket !== undefined) return `tcp-socket ${probe.tcpSocket.host ?? ''}:${String(probe.tcpSocket.port)} ${attrs}`;
  if (probe.grpc !== undefined) {
    const service = probe.grpc.service ? ` ${probe.grpc.service}` : '';
    return `grpc <pod>:${probe.grpc.port}${service} ${attrs}`;
  }
  return `unknown ${attrs}`;
}

/** The downward-API fields kubectl resolves in the Environment section. */
function fieldValue(pod: V1Pod, path: string): string {
  const m = /^metadata\.(labels|annotations)\['(.*)'\]$/.exec(path);
  if (m !== null) return (m[1] === 'labels' ? pod.metadata?.labels : pod.metadata?.annotations)?.[m[2] as string] ?? '';
  switch (path) {
    case 'metadata.name':
      return pod.metadata?.name ?? '';
    case 'metadata.namespace':
      return pod.metadata?.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata?.uid ?? '';
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP':
      return pod.status?.hostIP ?? '';
    case 'status.podIP':
      return pod.status?.podIP ?? '';
    case 'status.podIPs':
      return (pod.status?.podIPs ?? []).map((p) => p.ip).join(',');
    default:
      return '';
  }
}

function writeEnv(w: PrefixWriter, c: V1Container, pod: V1Pod): void {
  for (const from of c.envFrom ?? []) {
    const optional = (o: boolean | undefined): string => `Optional: ${o === true}`;
    if (from.configMapRef !== undefined) {
      w.write(2, 'Environment Variables from:');
      w.write(3, '%s\tConfigMap\t%s', `${from.configMapRef.name ?? ''}${from.prefix ? ` with prefix '${from.prefix}'` : ''}`, optional(from.configMapRef.optional));
    } else if (from.secretRef !== undefined) {
      w.write(2, 'Environment Variables from:');
      w.write(3, '%s\tSecret\t%s', `${from.secretRef.name ?? ''}${from.prefix ? ` with prefix '${from.prefix}'` : ''}`, optional(from.secretRef.optional));
    }
  }
  const env = c.env ?? [];
  w.write(2, env.length === 0 ? 'Environment:\t<none>' : 'Environment:');
  for (const e of env) w.write(3, '%s:\t%s', e.name, envValue(e, c, pod));
}

function envValue(e: V1EnvVar, c: V1Container, pod: V1Pod): string {
  const from = e.valueFrom;
  if (from === undefined) return (e.value ?? '').split('\n').join('\n\t');
  if (from.fieldRef !== undefined) {
    return `${fieldValue(pod, from.fieldRef.fieldPath)} (${from.fieldRef.apiVersion ?? 'v1'}:${from.fieldRef.fieldPath})`;
  }
  if (from.resourceFieldRef !== undefined) {
    const [kind, name] = from.resourceFieldRef.resource.split('.');
    const list = kind === 'limits' ? c.resources?.limits : c.resources?.requests;
    const value = name === undefined ? undefined : list?.[name];
    return `${value ?? (kind === 'limits' ? 'node allocatable' : '0')} (${from.resourceFieldRef.resource})`;
  }
  if (from.secretKeyRef !== undefined) {
    const r = from.secretKeyRef;
    return `<set to the key '${r.key}' in secret '${r.name ?? ''}'>\tOptional: ${r.optional === true}`;
  }
  if (from.configMapKeyRef !== undefined) {
    const r = from.configMapKeyRef;
    return `<set to the key '${r.key}' of config map '${r.name ?? ''}'>\tOptional: ${r.optional === true}`;
  }
  return '<unknown source>';
}

function describeVolumes(w: PrefixWriter, volumes: V1Volume[]): void {
  if (volumes.length === 0) {
    w.write(0, 'Volumes:\t<none>');
    return;
  }
  w.write(0, 'Volumes:');
  for (const v of volumes) {
    w.write(1, '%s:', v.name);
    const field = (name: string, value: string): void => w.write(2, `${name}:\t%s`, value);
    if (v.hostPath !== undefined) {
      field('Type', 'HostPath (bare host directory volume)');
      field('Path', v.hostPath.path);
      field('HostPathType', v.hostPath.type ?? '');
    } else if (v.emptyDir !== undefined) {
      field('Type', "EmptyDir (a temporary directory that shares a pod's lifetime)");
      field('Medium', v.emptyDir.medium ?? '');
      field('SizeLimit', v.emptyDir.sizeLimit ?? '<unset>');
    } else if (v.configMap !== undefined) {
      field('Type', 'ConfigMap (a volume populated by a ConfigMap)');
      field('Name', v.configMap.name ?? '');
      field('Optional', String(v.configMap.optional === true));
    } else if (v.secret !== undefined) {
      field('Type', 'Secret (a volume populated by a Secret)');
      field('SecretName', v.secret.secretName ?? '');
      field('Optional', String(v.secret.optional === true));
    } else if (v.persistentVolumeClaim !== undefined) {
      field('Type', 'PersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)');
      field('ClaimName', v.persistentVolumeClaim.claimName);
      field('ReadOnly', String(v.persistentVolumeClaim.readOnly === true));
    } else if (v.projected !== undefined) {
      field('Type', 'Projected (a volume that contains injected data from multiple sources)');
      for (const s of v.projected.sources ?? []) {
        if (s.serviceAccountToken !== undefined) field('TokenExpirationSeconds', String(s.serviceAccountToken.expirationSeconds ?? 3607));
        if (s.configMap !== undefined) {
          field('ConfigMapName', s.configMap.name ?? '');
          field('Optional', String(s.configMap.optional === true));
        }
        if (s.secret !== undefined) {
          field('SecretName', s.secret.name ?? '');
          field('Optional', String(s.secret.optional === true));
        }
        if (s.downwardAPI !== undefined) field('DownwardAPI', 'true');
      }
    } else if (v.downwardAPI !== undefined) {
      field('Type', 'DownwardAPI (a volume populated by information about the pod)');
    } else if (v.image !== undefined) {
      field('Type', 'Image (a container image or OCI artifact)');
      field('Reference', v.image.reference ?? '');
      field('PullPolicy', v.image.pullPolicy ?? '');
    } else {
      w.write(2, '<unknown>');
    }
  }
}

/** kubectl's printTolerationsMultiline. */
function writeTolerations(w: PrefixWriter, tolerations: V1Toleration[]): void {
  if (tolerations.length === 0) {
    w.write(0, 'Tolerations:\t<none>');
    return;
  }
  const sorted = [...tolerations].sort((a, b) => ((a.key ?? '') < (b.key ?? '') ? -1 : (a.key ?? '') > (b.key ?? '') ? 1 : 0));
  sorted.forEach((t, i) => {
    let text = t.key ?? '';
    if (t.value) text += `=${t.value}`;
    if (t.effect) text += `:${t.effect}`;
    // An operator Exists without a key tolerates everything.
    if (t.operator === 'Exists' && !t.value) text += t.key || t.effect ? ' op=Exists' : 'op=Exists';
    if (t.tolerationSeconds !== undefined) text += ` for ${t.tolerationSeconds}s`;
    w.write(0, i === 0 ? 'Tolerations:\t%s' : '\t%s', text);
  });
}

/** kubectl's DescribeEvents: oldest first, repeated events as "5m (x3 over 10m)". */
function describeEvents(w: PrefixWriter, events: CoreV1Event[], now: Date): void {
  if (events.length === 0) {
    w.write(0, 'Events:\t<none>');
    return;
  }
  w.flush();
  const lastSeen = (e: CoreV1Event): number =>
    (toDate(e.lastTimestamp) ?? toDate(e.series?.lastObservedTime) ?? toDate(e.eventTime) ?? toDate(e.firstTimestamp))?.getTime() ?? 0;
  const sorted = [...events].sort((a, b) => lastSeen(a) - lastSeen(b));
  w.write(0, 'Events:');
  w.write(1, 'Type\tReason\tAge\tFrom\tMessage');
  w.write(1, '----\t------\t----\t----\t-------');
  for (const e of sorted) {
    const age = eventInterval(e, now);
    const source = e.source?.component || e.reportingComponent || '';
    w.write(1, '%s\t%s\t%s\t%s\t%s', e.type ?? '', e.reason ?? '', age, source, (e.message ?? '').trim());
  }
}


// ---------------------------------------------------------------------------
// `kubectl events` table

/**
 * A cell of kubectl events: a value ends at its first line break ("...", as
 * later kubectl does; 1.34 lets the break through and splits the row),
 * and ESC is shown as "^[" (printers.EscapeTerminal) so a message cannot
 * drive the terminal. Other control characters pass, as with kubectl.
 */
function eventCell(value: string | undefined): string {
  let s = value ?? '';
  const cut = s.search(/[\f\n\r]/);
  if (cut >= 0) s = `${s.slice(0, cut)}...`;
  return s.replaceAll('\x1b', '^[');
}

/** kubectl events' LAST SEEN: the age of the last occurrence, "5m (x3 over 10m)" for a repeated event. */
function eventInterval(e: CoreV1Event, now: Date): string {
  const first = toDate(e.eventTime) !== null ? since(e.eventTime, now) : since(e.firstTimestamp, now);
  if (e.series !== undefined) return `${since(e.series.lastObservedTime, now)} (x${e.series.count ?? 0} over ${first})`;
  if ((e.count ?? 0) > 1) return `${since(e.lastTimestamp, now)} (x${e.count} over ${first})`;
  return first;
}

/** The header and rows of `kubectl events` (with NAMESPACE first when `namespaces`, as -A prints). */
export function eventTableRows(events: CoreV1Event[], now: Date, namespaces: boolean): { header: string[]; rows: string[][] } {
  const header = [...(namespaces ? ['NAMESPACE'] : []), 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'];
  const rows = events.map((e) => [
    ...(namespaces ? [e.metadata?.namespace ?? ''] : []),
    eventInterval(e, now),
    eventCell(e.type),
    eventCell(e.reason),
    `${eventCell(e.involvedObject.kind)}/${eventCell(e.involvedObject.name)}`,
    eventCell((e.message ?? '').trim()),
  ]);
  return { header, rows };
}

/** `kubectl events` as a table, in the given order: LAST SEEN, TYPE, REASON, OBJECT (Kind/name), MESSAGE. */
export function formatEventTable(events: CoreV1Event[], now: Date, opts: { namespaces: boolean }): string {
  const { header, rows } = eventTableRows(events, now, opts.namespaces);
  return formatTable(header, rows);
}


// ---------------------------------------------------------------------------
// Layout

/**
 * kubectl describe's PrefixWriter over a text/tabwriter: lines are indented
 * two spaces per level and cells are tab-separated; toString() aligns them.
 * flush() ends an alignment section, as kubectl flushes before events.
 */
class PrefixWriter {
  private readonly sections: string[][] = [[]];

  write(level: number, format: string, ...args: string[]): void {
    let i = 0;
    const text = format.replace(/%s/g, () => args[i++] ?? '');
    // A value with newlines continues on lines of its own, indented alike.
    for (const line of text.split('\n')) (this.sections.at(-1) as string[]).push('  '.repeat(level) + line);
  }

  flush(): void {
    this.sections.push([]);
  }

  toString(): string {
    return this.sections
      .filter((s) => s.length > 0)
      .map((lines) => tabwrite(lines))
      .join('\n')
      .concat('\n');
  }
}

/**
 * Go's text/tabwriter, as kubectl configures it (minwidth 0, tabwidth 8,
 * padding 2, padchar ' ', no flags): a cell is text terminated by a tab; a
 * column block is a run of consecutive lines that all have a cell in that
 * column, and is as wide as its widest cell plus the padding. The text after
 * a line's last tab is not part of any column. Trailing spaces are trimmed,
 * which tabwriter does not do, to keep output and tests tidy.
 */
export function tabwrite(lines: string[]): string {
  const cells = lines.map((l) => l.split('\t'));
  const widths: number[] = [];
  const out: string[] = [];
  const width = (s: string): number => [...s].length;

  const writeLines = (line0: number, line1: number): void => {
    for (let i = line0; i < line1; i++) {
      const line = cells[i] as string[];
      let text = '';
      line.forEach((c, j) => {
        text += c;
        if (j < widths.length) text += ' '.repeat(Math.max(0, (widths[j] as number) - width(c)));
      });
      out.push(text.trimEnd());
    }
  };

  const format = (line0: number, line1: number): void => {
    const column = widths.length;
    for (let t = line0; t < line1; t++) {
      if (column >= (cells[t] as string[]).length - 1) continue;
      writeLines(line0, t);
      line0 = t;
      let w = 0;
      for (; t < line1; t++) {
        const line = cells[t] as string[];
        if (column >= line.length - 1) break;
        w = Math.max(w, width(line[column] as string) + 2);
      }
      widths.push(w);
      format(line0, t);
      widths.pop();
      line0 = t;
    }
    writeLines(line0, line1);
  };

  format(0, cells.length);
  return out.join('\n');
}

/** The node summary `klet status` prints above its pod table. */
export function formatNodeSummary(
  s: { nodeName: string; runtimeName: string; runtimeVersion: string; runtimeApiVersion: string; conditions: string[]; phases: [string, number][]; cluster?: ClusterStatus },
  where: { endpoint: string; rootDir: string; pods: number },
): string {
  const counts = s.phases.map(([k, n]) => `${n} ${k.toLowerCase()}`).join(', ') || 'none';
  return (
    `Node:     ${s.nodeName}\n` +
    `Runtime:  ${s.runtimeName} ${s.runtimeVersion} (CRI ${s.runtimeApiVersion}) on ${where.endpoint}  ${s.conditions.join(' ')}\n` +
    (s.cluster ? formatClusterLines(s.cluster) : '') +
    `Pods:     ${where.pods} (${counts})\n` +
    `Root dir: ${where.rootDir}\n\n`
  );
}

/** The cluster lines of `klet status` while `klet sync --kubeconfig` runs. */
export function formatClusterLines(c: ClusterStatus): string {
  const lease = c.lease.renewTime === null ? 'not renewed yet' : `renewed ${c.lease.ageSeconds}s ago (${c.lease.renewTime})`;
  const watch = `${c.watch.state}, ${c.watch.pods} pod${c.watch.pods === 1 ? '' : 's'}${c.watch.error ? `: ${c.watch.error}` : ''}`;
  return (
    `Cluster:  ${c.server} (node ${c.nodeName} ${c.registered ? 'registered' : 'not registered'})\n` +
    `Lease:    ${lease}\n` +
    `Watch:    ${watch}\n` +
    `Events:   ${c.events.sent} sent, ${c.events.dropped} dropped, ${c.events.filtered} rate-limited\n` +
    (c.lastError ? `API error: ${c.lastError.message} (${c.lastError.at})\n` : '')
  );
}
