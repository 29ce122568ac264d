/**
 * NodeApi over klet's REST client (lib/kube/rest.ts), from a kubeconfig file.
 * The client-node types name the objects; its runtime is not loaded (its
 * generated API layer was ~26 MB of resident heap, issue 39): answers and
 * watch events are decoded into the same shapes by the models' schema
 * (lib/pod/decode.ts deserializeModel).
 */
import type { V1ConfigMap, V1Lease, V1Node, V1NodeStatus, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import type { NodeApi, PodApi } from '../node/api.js';
import { NODE_LEASE_NAMESPACE } from '../node/api.js';
import type { ObjectApi } from '../volume/api-objects.js';
import type { ServiceApi } from '../node/service-lister.js';
import type { EventApi } from '../node/event-recorder.js';
import type { ReviewApi } from '../server/kubelet-auth.js';
import { pause } from '../util/sleep.js';
import { ApiServerError, toApiServerError } from './errors.js';
import { loadKubeconfig } from './kubeconfig.js';
import { ResumeGate, type Resumption } from './resume-gate.js';
import { restClient } from './rest.js';
import { deserializeModel } from '../pod/decode.js';

/** Deadline of one API request. */
export const API_REQUEST_TIMEOUT_MS = 30_000;
/** The reflector's default minWatchTimeout (5 minutes): the pod and Service watches. */
export const WATCH_MIN_TIMEOUT_SECONDS = 300;
/**
 * The per-object ConfigMap and Secret watches: 30 minutes, as the kubelet's
 * watch-based manager bumps its reflectors' MinWatchTimeout "to avoid
 * recreating" one watch per referenced object (pkg/kubelet/util/manager):
 * 221 watches of 5–10 minutes were ~30 watch requests a minute holding 110 pods.
 */
export const OBJECT_WATCH_MIN_TIMEOUT_SECONDS = 1800;
/**
 * Server-side length of one watch request: `minSeconds` to twice that, drawn
 * per request (the reflector's minWatchTimeout * (1 + rand)), so that watches
 * started together do not all end together. It was 25 s, under client-node's
 * inactivity timeout: with a ConfigMap and a Secret per pod that was ~9 new
 * watch requests a second holding 110 pods (bench/cluster-cpu.md).
 */
export function watchTimeoutSeconds(random: () => number = Math.random, minSeconds = WATCH_MIN_TIMEOUT_SECONDS): number {
  return Math.floor(minSeconds * (1 + random()));
}
/** Client-side: a watch that brings nothing for this long past its server-side end is dead (a connection lost without a close). */
const WATCH_GRACE_MS = 30_000;
/** The annotation on the bookmark that ends a watch's initial events (metav1.InitialEventsAnnotationKey). */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';
/** The node leases' collection. */
const LEASES = `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases`;
/** Reconnect back-off of the pod watch: 200 ms doubling to 30 s (the reflector's is similar). */
const WATCH_RETRY_INITIAL_MS = 200;
/**
 * How long a 403 on a set never listed yet is taken for the Node
 * authorizer's lag and retried without a word: the authorizer learns that a
 * pod on this node references a ConfigMap or Secret from its own watch of
 * pods, which can come after klet's (the kubelet logs "no relationship found
 * between node … and this object" then; klet says it only when it lasts).
 */
const AUTHORIZER_LAG_MS = 5000;
const WATCH_RETRY_MAX_MS = 30_000;
/**
 * How long the scout's resumed watch (ResumeGate) may run without a 410
 * before resuming is taken as served: a restarted API server refuses a too
 * old resourceVersion with an ERROR event as the watch starts.
 */
const RESUME_VERDICT_MS = 1000;

/** Connect to the API server a kubeconfig names (no request is made yet). */
export async function connectNodeApi(kubeconfigPath: string, opts: { requestTimeoutMs?: number } = {}): Promise<NodeApi & PodApi & ObjectApi & ServiceApi & EventApi & ReviewApi> {
  const loaded = await loadKubeconfig(kubeconfigPath);
  const { server, secrets } = loaded;
  const rest = await restClient(loaded);
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS;
  const STRATEGIC = 'application/strategic-merge-patch+json';
  const MERGE = 'application/merge-patch+json';
  const seg = encodeURIComponent;
  /** One request, its answer decoded as `type` (a client-node model name) when given. */
  const req = async <T>(method: string, path: string, signal: AbortSignal, o: { query?: Record<string, string>; body?: unknown; contentType?: string; type?: string } = {}): Promise<T> => {
    const out = await rest.request(method, path, { signal, timeoutMs, ...(o.query ? { query: o.query } : {}), ...(o.body !== undefined ? { body: o.body } : {}), ...(o.contentType ? { contentType: o.contentType } : {}) });
    return (o.type ? deserializeModel(out, o.type) : out) as T;
  };

  /** Requests made, by verb (the first word of `what`), answered or not. */
  const requests: Record<string, number> = {};
  async function call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const verb = what.split(' ')[0]!;
    requests[verb] = (requests[verb] ?? 0) + 1;
    try {
      return await fn();
    } catch (err) {
      throw toApiServerError(err, `API server ${server}`, what, secrets);
    }
  }
  const orNull = async <T>(p: Promise<T>): Promise<T | null> => {
    try {
      return await p;
    } catch (err) {
      if (err instanceof ApiServerError && err.status === 404) return null;
      throw err;
    }
  };

  /**
   * Whether the server streams a watch's initial state (`sendInitialEvents`,
   * the WatchList feature: on by default in kube-apiserver 1.32 and 1.34, off
   * in 1.33). Until a server refuses it (422), listWatch gets its set from one
   * such watch instead of a LIST and a WATCH: one request per object instead
   * of two at start, and after an API server restart two instead of three
   * (the resumed watch's 410, then the set again). The kubelet v1.34 still
   * lists (client-go's WatchListClient is off by default there); what the
   * consumer sees is the same.
   */
  let watchListServed = true;
  /** After the server was unreachable, one watch resumes first and the others do what it learns (lib/kube/resume-gate.ts). */
  const resumeGate = new ResumeGate();

  /**
   * List, then watch from the list's resourceVersion until the signal aborts
   * (the reflector; where the server streams initial events, one watch-list
   * request stands for both, see watchListServed): `items` gets the whole
   * set after the list (or the initial events) and after every change; a
   * 410 Gone relists, any failure is reported to `error` and retried with
   * back-off. As the reflector, a watch that ends (also cut off
   * by the server going away) or that cannot start because the connection is
   * refused or the server says 429 is started again from the last
   * resourceVersion, without a list: after a network cut the server still
   * has what came since, rather than every reflector listing again (the
   * relist storm of apiserver-restart). When the server was unreachable,
   * one watch resumes first and the others wait for what it meets (served,
   * or 410 Gone after a restart: then they all list again without trying;
   * lib/kube/resume-gate.ts). Other failures
   * relist. A watch that starts again after a failure was reported hands
   * `items` the set once more, so the consumer knows it is current. Never rejects.
   */
  async function listWatch<T extends { metadata?: { uid?: string; resourceVersion?: string } }>(o: {
    path: string;
    fieldSelector: string;
    type: string;
    what: string;
    /** The watches' minWatchTimeout (WATCH_MIN_TIMEOUT_SECONDS unless given). */
    minWatchSeconds?: number;
    list: (signal: AbortSignal) => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>;
    on: { items(items: T[]): void; error(message: string): void };
    signal: AbortSignal;
  }): Promise<void> {
    const { signal, on } = o;
    // Watches are streams on the connection every other request uses (HTTP/2, lib/kube/rest.ts): a
    // connection per watch was a TCP+TLS handshake for every watch request (bench/cluster-cpu.md).
    const items = new Map<string, T>();
    let rv: string | undefined;
    let backoff = WATCH_RETRY_INITIAL_MS;
    /** A failure was reported to `error` since the set was last handed over. */
    let failed = false;
    /** The set was handed over at least once; until then a 403 may be the authorizer's lag. */
    let listed = false;
    const firstTry = Date.now();
    /** This watch is the connection's scout after an outage (resumeGate): it tells the others what its resumed watch met. */
    let scout = false;
    let verdictTimer: NodeJS.Timeout | undefined;
    const tell = (v: Resumption) => {
      if (!scout) return;
      scout = false;
      clearTimeout(verdictTimer);
      resumeGate.learned(v);
    };
    // Changes that arrive together are delivered once (each delivery is a full snapshot the pod
    // config diffs against every pod: 30 pods created at once were 30 snapshots of up to 30 pods).
    let scheduled = false;
    const emit = () => {
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        if (!signal.aborted) on.items([...items.values()]);
      });
    };
    while (!signal.aborted) {
      let started = false;
      let serverError = false;
      // No resourceVersion to watch from: the set comes first, from a list or as the watch's initial events.
      const watchList = rv === undefined && watchListServed;
      try {
        if (rv === undefined && !watchList) {
          const list = await call(`list ${o.what}`, () => o.list(signal));
          items.clear();
          for (const p of list.items) items.set(p.metadata?.uid ?? '', p);
          rv = list.metadata?.resourceVersion;
          failed = false;
          listed = true;
          emit();
        }
        requests.watch = (requests.watch ?? 0) + 1;
        const timeoutSeconds = watchTimeoutSeconds(Math.random, o.minWatchSeconds);
        // The watch-list's initial events build the set here; it replaces `items` at the bookmark that ends them.
        let initial: Map<string, T> | undefined = watchList ? new Map() : undefined;
        const params = watchList
          ? { fieldSelector: o.fieldSelector, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true, timeoutSeconds }
          : { fieldSelector: o.fieldSelector, resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds };
        let expired = false;
        // The server ends the watch after timeoutSeconds; then it resumes from rv.
        await rest.watch(o.path, params, {
          signal,
          timeoutMs: timeoutSeconds * 1000 + WATCH_GRACE_MS,
          onStart: () => {
            // The response headers are in: the watch runs.
            started = true;
            backoff = WATCH_RETRY_INITIAL_MS;
            if (scout) verdictTimer = setTimeout(() => tell('resume'), RESUME_VERDICT_MS);
            if (failed && initial === undefined) {
              failed = false;
              emit();
            }
          },
          onEvent: (type, obj) => {
            const m = obj as { code?: number; metadata?: { resourceVersion?: string; uid?: string; annotations?: Record<string, string> } } | undefined;
            tell(type === 'ERROR' && m?.code === 410 ? 'relist' : 'resume');
            if (type === 'ERROR') {
              if (m?.code === 410) expired = true;
              else {
                serverError = true;
                throw new Error(`watch error: ${JSON.stringify(obj)}`);
              }
              return;
            }
            if (initial !== undefined) {
              // The initial events carry each object's own resourceVersion, not the set's: the watch can
              // resume only from the bookmark that ends them (cut off before it, the set is asked for again).
              if (type === 'BOOKMARK') {
                if (m?.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true') return;
                items.clear();
                for (const [k, v] of initial) items.set(k, v);
                initial = undefined;
                rv = m.metadata.resourceVersion;
                failed = false;
                listed = true;
                emit();
                return;
              }
              const item = deserializeModel(obj, o.type) as T;
              if (type === 'DELETED') initial.delete(item.metadata?.uid ?? '');
              else initial.set(item.metadata?.uid ?? '', item);
              return;
            }
            if (m?.metadata?.resourceVersion) rv = m.metadata.resourceVersion;
            if (type === 'BOOKMARK') return;
            const item = deserializeModel(obj, o.type) as T;
            if (type === 'DELETED') items.delete(item.metadata?.uid ?? '');
            else items.set(item.metadata?.uid ?? '', item);
            emit();
          },
        });
        const gone = expired;
        tell(gone ? 'relist' : 'resume');
        // Ended before the bookmark that closes the initial events: no set to hand over; ask again after the back-off.
        if (initial !== undefined && !signal.aborted) throw new Error('the watch ended before its initial events were all sent');
        if (gone) rv = undefined; // 410 Gone: the resourceVersion is too old; relist
        backoff = WATCH_RETRY_INITIAL_MS;
      } catch (err) {
        if (signal.aborted) break;
        const e = toApiServerError(err, `API server ${server}`, `watch ${o.what}`, secrets);
        if (watchList && !started && (e.status === 422 || e.status === 400)) {
          // The server does not stream initial events (kube-apiserver 1.33's default; a feature gate off): list, as the reflector falls back.
          watchListServed = false;
          continue;
        }
        if (watchList && serverError && rv === undefined) {
          // Taken, then an ERROR event before the initial events' end: the server cannot stream them ("the
          // required storage feature RequestWatchProgress is disabled": an etcd without progress notifications).
          // List instead from now on, as the reflector falls back to LIST+WATCH.
          watchListServed = false;
          continue;
        }
        // The reflector's: a watch cut off after it started, or one refused (connection refused, 429), resumes
        // from its resourceVersion; any other failure (an ERROR event, a list or watch request answered with
        // an error) starts again from a fresh list.
        const resume = rv !== undefined && !serverError && (started || e.refused || e.status === 429);
        if (!resume) rv = undefined;
        // The scout met something other than an unreachable server: the others find out for themselves.
        if (!e.refused) tell('resume');
        if (!(e.status === 403 && !listed && Date.now() - firstTry < AUTHORIZER_LAG_MS)) {
          failed = true;
          on.error(e.message);
        }
        if (e.refused && resume && !scout) {
          const v = await resumeGate.wait(signal);
          if (signal.aborted) break;
          if (v === 'scout') scout = true;
          else {
            if (v === 'relist') rv = undefined;
            backoff = WATCH_RETRY_INITIAL_MS;
            continue;
          }
        }
        await pause(backoff, signal);
        backoff = Math.min(backoff * 2, WATCH_RETRY_MAX_MS);
      }
    }
    clearTimeout(verdictTimer);
    if (scout) resumeGate.abandon();
  }

  return {
    server,
    requests,
    getNode: (name, signal) => orNull(call(`get node ${name}`, () => req<V1Node>('GET', `/api/v1/nodes/${seg(name)}`, signal, { type: 'V1Node' }))),
    createNode: (node, signal) => call(`create node ${node.metadata?.name}`, () => req<V1Node>('POST', '/api/v1/nodes', signal, { body: node, type: 'V1Node' })),
    patchNodeMetadata: (name, meta, signal) =>
      call(`patch node ${name}`, () => req<V1Node>('PATCH', `/api/v1/nodes/${seg(name)}/status`, signal, { body: { metadata: meta }, contentType: STRATEGIC, type: 'V1Node' })),
    patchNodeStatus: (name, status: V1NodeStatus, signal) =>
      call(`patch node ${name} status`, () => req<V1Node>('PATCH', `/api/v1/nodes/${seg(name)}/status`, signal, { body: { status }, contentType: MERGE, type: 'V1Node' })),
    getLease: (name, signal) =>
      orNull(call(`get lease ${NODE_LEASE_NAMESPACE}/${name}`, () => req<V1Lease>('GET', `${LEASES}/${seg(name)}`, signal, { type: 'V1Lease' }))),
    createLease: (lease: V1Lease, signal) =>
      call(`create lease ${NODE_LEASE_NAMESPACE}/${lease.metadata?.name}`, () => req<V1Lease>('POST', LEASES, signal, { body: lease, type: 'V1Lease' })),
    updateLease: (lease: V1Lease, signal) =>
      call(`update lease ${NODE_LEASE_NAMESPACE}/${lease.metadata?.name}`, () =>
        req<V1Lease>('PUT', `${LEASES}/${seg(lease.metadata?.name ?? '')}`, signal, { body: lease, type: 'V1Lease' }),
      ),
    listNodePods: async (nodeName, signal) =>
      (await call(`list pods on node ${nodeName}`, () => req<{ items: V1Pod[] }>('GET', '/api/v1/pods', signal, { query: { fieldSelector: `spec.nodeName=${nodeName}` }, type: 'V1PodList' }))).items,
    watchNodePods: (nodeName, on, signal) => {
      const fieldSelector = `spec.nodeName=${nodeName}`;
      return listWatch<V1Pod>({
        path: '/api/v1/pods',
        fieldSelector,
        type: 'V1Pod',
        what: `pods on node ${nodeName}`,
        list: (s) => req('GET', '/api/v1/pods', s, { query: { fieldSelector }, type: 'V1PodList' }),
        on: { items: on.pods, error: on.error },
        signal,
      });
    },
    watchServices: (on, signal) => {
      // Headless services give no environment variables: the kubelet's informer leaves them out (issue 122394).
      const fieldSelector = 'spec.clusterIP!=None';
      return listWatch<V1Service>({
        path: '/api/v1/services',
        fieldSelector,
        type: 'V1Service',
        what: 'services',
        list: (s) => req('GET', '/api/v1/services', s, { query: { fieldSelector }, type: 'V1ServiceList' }),
        on,
        signal,
      });
    },
    watchObject: (kind, namespace, name, on, signal) => {
      const fieldSelector = `metadata.name=${name}`;
      const singular = kind === 'configmaps' ? 'configmap' : 'secret';
      const path = `/api/v1/namespaces/${seg(namespace)}/${kind}`;
      return listWatch<V1ConfigMap | V1Secret>({
        path,
        fieldSelector,
        type: kind === 'configmaps' ? 'V1ConfigMap' : 'V1Secret',
        what: `${singular} ${namespace}/${name}`,
        minWatchSeconds: OBJECT_WATCH_MIN_TIMEOUT_SECONDS,
        list: (s) => req('GET', path, s, { query: { fieldSelector }, type: kind === 'configmaps' ? 'V1ConfigMapList' : 'V1SecretList' }),
        on,
        signal,
      });
    },
    createServiceAccountToken: async (namespace, serviceAccount, spec, signal) => {
      const tr = await call(`create token for serviceaccount ${namespace}/${serviceAccount}`, () =>
        req<{ status?: { token?: string; expirationTimestamp?: string } }>('POST', `/api/v1/namespaces/${seg(namespace)}/serviceaccounts/${seg(serviceAccount)}/token`, signal, {
          body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec },
        }),
      );
      const token = tr?.status?.token ?? '';
      const exp = tr?.status?.expirationTimestamp;
      if (token === '' || exp === undefined) throw new ApiServerError(`API server ${server}: create token for serviceaccount ${namespace}/${serviceAccount}: the TokenRequest came back without a token`);
      return { token, expirationTimestamp: new Date(exp) };
    },
    createPod: (pod, signal) =>
      call(`create pod ${pod.metadata?.namespace}/${pod.metadata?.name}`, () =>
        req<V1Pod>('POST', `/api/v1/namespaces/${seg(pod.metadata?.namespace ?? 'default')}/pods`, signal, { body: pod, type: 'V1Pod' }),
      ),
    deletePod: async (namespace, name, uid, signal) => {
      await call(`delete pod ${namespace}/${name}`, () =>
        req('DELETE', `/api/v1/namespaces/${seg(namespace)}/pods/${seg(name)}`, signal, { body: { gracePeriodSeconds: 0, preconditions: { uid } } }),
      );
    },
    patchPodStatus: (namespace, name, uid, status, signal) =>
      call(`patch pod ${namespace}/${name} status`, () =>
        req<V1Pod>('PATCH', `/api/v1/namespaces/${seg(namespace)}/pods/${seg(name)}/status`, signal, { body: { metadata: { uid }, status }, contentType: MERGE, type: 'V1Pod' }),
      ),
    createEvent: (namespace, event, signal) =>
      call(`create event ${namespace}/${event.metadata?.name}`, () => req('POST', `/api/v1/namespaces/${seg(namespace)}/events`, signal, { body: event })),
    patchEvent: (namespace, name, patch, signal) =>
      call(`patch event ${namespace}/${name}`, () =>
        req('PATCH', `/api/v1/namespaces/${seg(namespace)}/events/${seg(name)}`, signal, {
          body: { count: patch.count, lastTimestamp: patch.lastTimestamp.toISOString(), message: patch.message },
          contentType: STRATEGIC,
        }),
      ),
    // The kubelet server's reviews (its node identity may create both: the Node authorizer's rules).
    reviewToken: async (token, signal) => {
      const r = await call('create tokenreview', () =>
        req<{ status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } } }>(
          'POST',
          '/apis/authentication.k8s.io/v1/tokenreviews',
          signal,
          { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } },
        ),
      );
      const u = r?.status?.user;
      return {
        authenticated: r?.status?.authenticated === true,
        ...(u?.username ? { user: { name: u.username, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups ?? [], ...(u.extra ? { extra: u.extra } : {}) } } : {}),
      };
    },
    reviewNodeAccess: async (q, signal) => {
      const r = await call('create subjectaccessreview', () =>
        req<{ status?: { allowed?: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', signal, {
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: q.user.name,
              ...(q.user.uid ? { uid: q.user.uid } : {}),
              groups: q.user.groups,
              ...(q.user.extra ? { extra: q.user.extra } : {}),
              resourceAttributes: { verb: q.verb, group: '', version: 'v1', resource: 'nodes', subresource: q.subresource, name: q.name },
            },
          },
        }),
      );
      return r?.status?.allowed === true;
    },
    reloadCredentials: () => {
      // New requests go over a new connection made with the certificate files read anew; the old
      // connection carries what it has (watches included) to their end, then closes.
      rest.reloadCredentials();
    },
    close: () => rest.close(),
  };
}

export type { V1Node };
