// Pure helpers of the cluster-mode scenarios of `npm run bench` (api-steady-N,
// api-churn, apiserver-restart): counting the node agent's API requests from
// the API server's audit log, the cgroups a container's /proc/PID/cgroup
// names, and whether the server's pod statuses match the runtime. No I/O:
// bench/bench.js reads the files and the API; test/unit/bench-cluster.test.ts
// tests these.

/** "verb resource[/subresource]" of an audit event ("get pods/status"); the request URI when it names no object (e.g. /version). */
export function requestKey(e) {
  const r = e.objectRef ? `${e.objectRef.resource ?? ''}${e.objectRef.subresource ? `/${e.objectRef.subresource}` : ''}` : e.requestURI;
  return `${e.verb} ${r}`;
}

/** A fresh state for tallyAudit: the long-running requests (watches) started and not completed yet, by audit ID. */
export function auditState() {
  return { open: new Map() };
}

/**
 * Count the requests `user` made, from audit events (the API server's
 * audit log, stages ResponseStarted and ResponseComplete; RequestReceived
 * omitted by the policy). A long-running request (a watch) logs both
 * stages under one audit ID: it is counted once, at ResponseStarted, and
 * stays in `state.open` until its ResponseComplete; any other request is
 * counted at ResponseComplete. With `from`/`to` (ms since the epoch) only
 * requests received in [from, to) are counted (`state.open` follows every
 * event regardless). Returns { "verb resource": count }.
 */
export function tallyAudit(events, user, state, { from = -Infinity, to = Infinity } = {}) {
  const counts = {};
  for (const e of events) {
    if (e.user?.username !== user) continue;
    const key = requestKey(e);
    if (e.stage === 'ResponseStarted') state.open.set(e.auditID, key);
    else if (e.stage === 'ResponseComplete') {
      if (state.open.delete(e.auditID)) continue; // counted when it started
    } else continue;
    const at = Date.parse(e.requestReceivedTimestamp);
    if (at >= from && at < to) counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** The open long-running requests in `state`, by "verb resource" ({ "watch configmaps": 110, ... }). */
export function openByKey(state) {
  const out = {};
  for (const k of state.open.values()) out[k] = (out[k] ?? 0) + 1;
  return out;
}

/** The sum of a { key: count } map. */
export const total = (counts) => Object.values(counts).reduce((a, b) => a + b, 0);

/** Counts over `seconds` scaled to per minute, two decimals, keys sorted. */
export function perMinute(counts, seconds) {
  return Object.fromEntries(
    Object.keys(counts)
      .sort()
      .map((k) => [k, Number(((counts[k] * 60) / seconds).toFixed(2))]),
  );
}

/**
 * The cgroup directories a /proc/PID/cgroup text names, under `root`
 * (/sys/fs/cgroup): one per v1 hierarchy ("4:memory:/k8s.io/ID" →
 * ROOT/memory/k8s.io/ID; "1:name=systemd:/x" → ROOT/systemd/x) and the v2
 * one ("0::/x" → ROOT/<unified>/x, `unified` = "unified" on a hybrid host,
 * "" on a v2-only one). The root cgroup ("/") is left out: it is nobody's to remove.
 */
export function cgroupDirs(text, root = '/sys/fs/cgroup', unified = 'unified') {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!m || m[2] === '/' || m[2] === '') continue;
    const hierarchy = m[1] === '' ? unified : m[1].startsWith('name=') ? m[1].slice(5) : m[1];
    out.push([root, hierarchy, m[2].replace(/^\//, '')].filter(Boolean).join('/'));
  }
  return out;
}

/**
 * The pods whose status on the server is not yet what the runtime shows:
 * `expected` maps a pod name to the container ID of its running app
 * container (as the runtime reports it, without the "containerd://"
 * prefix); a pod is current when the server has it Ready=True and its
 * `app` container status names that container, running. Returns the
 * names of the pods that are not (missing ones included), sorted.
 */
export function notCurrent(serverPods, expected) {
  const byName = new Map(serverPods.map((p) => [p.metadata?.name, p]));
  const stale = [];
  for (const [name, id] of Object.entries(expected)) {
    const p = byName.get(name);
    const ready = p?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    const app = p?.status?.containerStatuses?.find((c) => c.name === 'app');
    const ok = ready && app?.ready === true && app.state?.running !== undefined && app.containerID?.replace(/^[a-z]+:\/\//, '') === id;
    if (!ok) stale.push(name);
  }
  return stale.sort();
}

/**
 * Leaks of a churn run: `after` − `before` for each count (fds, sockets,
 * watches, mounts, …), the absolute figure for those `before` lacks
 * (sandboxes, containers, cgroups left). Negative differences (the agent
 * closed something it had open before) count as 0.
 */
export function leaks(before, after) {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, Math.max(0, v - (before[k] ?? 0))]));
}
