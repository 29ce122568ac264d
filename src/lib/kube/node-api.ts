/**
 * NodeApi over @kubernetes/client-node, from a kubeconfig file. Import this
 * module lazily (await import): client-node costs ~0.7 s to load, and only
 * the commands that talk to an API server may pay for it.
 */
import fs from 'node:fs/promises';
import type { V1ConfigMap, V1Lease, V1Node, V1NodeStatus, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import { LineCounter, parseDocument } from 'yaml';
import { InputError, errorMessage } from '../errors.js';
import type { NodeApi, PodApi } from '../node/api.js';
import { NODE_LEASE_NAMESPACE } from '../node/api.js';
import type { ObjectApi } from '../volume/api-objects.js';
import type { ServiceApi } from '../node/service-lister.js';
import type { EventApi } from '../node/event-recorder.js';
import type { ReviewApi } from '../server/kubelet-auth.js';
import { pause } from '../util/sleep.js';
import { ApiServerError, redact, toApiServerError } from './errors.js';

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
/** Reconnect back-off of the pod watch: 200 ms doubling to 30 s (the reflector's is similar). */
const WATCH_RETRY_INITIAL_MS = 200;
const WATCH_RETRY_MAX_MS = 30_000;

type ClientNode = typeof import('@kubernetes/client-node');
type KubeConfig = import('@kubernetes/client-node').KubeConfig;

export interface LoadedKubeconfig {
  kc: KubeConfig;
  server: string;
  /** Credentials found in it: never to appear in a message. */
  secrets: string[];
}

/**
 * Read, parse and check a kubeconfig; errors name the file (and line). A
 * file that is missing or not YAML is refused before client-node is loaded
 * (seconds of CPU and disk on a busy machine, for an error that needs none).
 */
export async function loadKubeconfig(path: string, k8sModule?: ClientNode): Promise<LoadedKubeconfig> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(`kubeconfig ${path}: ${code === 'ENOENT' ? 'no such file' : errorMessage(err)}`);
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, lineCounter });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = lineCounter.linePos(e.pos[0]).line;
    throw new InputError(`kubeconfig ${path}${line ? `:${line}` : ''}: not YAML: ${e.message.split('\n')[0]}`);
  }
  const obj = doc.toJS() as unknown;
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new InputError(`kubeconfig ${path}: not a kubeconfig (expected a mapping with clusters, users and contexts)`);
  const k8s = k8sModule ?? (await import('@kubernetes/client-node'));
  const kc = new k8s.KubeConfig();
  try {
    kc.loadFromFile(path);
  } catch (err) {
    throw new InputError(`kubeconfig ${path}: ${errorMessage(err).split('\n')[0]}`);
  }
  const secrets: string[] = [];
  for (const u of kc.users) {
    for (const s of [u.token, u.password, u.keyData]) if (typeof s === 'string' && s !== '') secrets.push(s);
  }
  if (!kc.currentContext) throw new InputError(`kubeconfig ${path}: no current-context`);
  const ctx = kc.getContextObject(kc.currentContext);
  if (!ctx) throw new InputError(`kubeconfig ${path}: current-context "${kc.currentContext}" is not among its contexts`);
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new InputError(`kubeconfig ${path}: context "${ctx.name}" names cluster "${ctx.cluster}", which is not among its clusters`);
  if (ctx.user && !kc.getCurrentUser()) throw new InputError(`kubeconfig ${path}: context "${ctx.name}" names user "${ctx.user}", which is not among its users`);
  await checkClientCertificate(path, kc.getCurrentUser());
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    throw new InputError(`kubeconfig ${path}: cluster "${cluster.name}" server "${redact(cluster.server, secrets)}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new InputError(`kubeconfig ${path}: cluster "${cluster.name}" server "${cluster.server}" is not an http(s) URL`);
  }
  return { kc, server: cluster.server.replace(/\/+$/, ''), secrets };
}

/**
 * A user with a client certificate (client-certificate/client-key files, as
 * the kubelet's TLS bootstrap writes, or inline data): both halves present,
 * readable and PEM, each error naming the kubeconfig and the file. client-node
 * has made the paths absolute (relative to the kubeconfig's directory).
 */
async function checkClientCertificate(path: string, user: import('@kubernetes/client-node').User | null): Promise<void> {
  if (!user) return;
  const hasCert = Boolean(user.certFile || user.certData);
  const hasKey = Boolean(user.keyFile || user.keyData);
  if (hasCert !== hasKey) throw new InputError(`kubeconfig ${path}: user "${user.name}" has a client ${hasCert ? 'certificate without its key' : 'key without its certificate'}`);
  const read = async (field: string, file: string | undefined, data: string | undefined, check: (pem: string) => unknown) => {
    let pem: string;
    if (file) {
      try {
        pem = await fs.readFile(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw new InputError(`kubeconfig ${path}: user "${user.name}" ${field} ${file}: ${code === 'ENOENT' ? 'no such file' : errorMessage(err)}`);
      }
    } else if (data) {
      pem = Buffer.from(data, 'base64').toString('utf8');
    } else {
      return;
    }
    try {
      check(pem);
    } catch {
      throw new InputError(`kubeconfig ${path}: user "${user.name}" ${field}${file ? ` ${file}` : '-data'}: not PEM`);
    }
  };
  const { X509Certificate, createPrivateKey } = await import('node:crypto');
  await read('client-certificate', user.certFile, user.certData, (pem) => new X509Certificate(pem));
  await read('client-key', user.keyFile, user.keyData, (pem) => createPrivateKey(pem));
}

/** Connect to the API server a kubeconfig names (no request is made yet). */
export async function connectNodeApi(kubeconfigPath: string, opts: { requestTimeoutMs?: number } = {}): Promise<NodeApi & PodApi & ObjectApi & ServiceApi & EventApi & ReviewApi> {
  const { kc, server, secrets } = await loadKubeconfig(kubeconfigPath);
  const k8s = await import('@kubernetes/client-node');
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
  const authentication = kc.makeApiClient(k8s.AuthenticationV1Api);
  const authorization = kc.makeApiClient(k8s.AuthorizationV1Api);
  const timeoutMs = opts.requestTimeoutMs ?? API_REQUEST_TIMEOUT_MS;

  /**
   * One connection pool for every request. client-node 2.0 gives each
   * request a new undici Agent (KubeConfig.applySecurityAuthentication ->
   * createDispatcher), so each request opened its own TCP+TLS connection:
   * a handshake on both sides per status patch or event (the TLS code was
   * the largest CPU item of a 30-pod start after GC; the kubelet keeps one
   * connection). The first Agent, made from this kubeconfig's TLS settings,
   * serves them all, with keep-alive.
   */
  let dispatcher: ReturnType<import('@kubernetes/client-node').RequestContext['getDispatcher']> | undefined;
  /** Per-request options: the caller's signal plus a deadline, and an optional Content-Type. */
  const options = (signal: AbortSignal, contentType?: string) => ({
    middleware: [
      {
        pre: (ctx: import('@kubernetes/client-node').RequestContext) => {
          if (dispatcher === undefined) dispatcher = ctx.getDispatcher();
          else ctx.setDispatcher(dispatcher);
          ctx.setSignal(AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]));
          if (contentType) ctx.setHeaderParam('Content-Type', contentType);
          return new k8s.Observable(Promise.resolve(ctx));
        },
        post: (res: import('@kubernetes/client-node').ResponseContext) => new k8s.Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append' as const,
  });

  /** What client-node's Watch needs of a kubeconfig, with the shared pool as every watch's dispatcher. */
  const watchConfig = {
    getCurrentCluster: () => kc.getCurrentCluster(),
    applySecurityAuthentication: async (ctx: import('@kubernetes/client-node').RequestContext) => {
      await kc.applySecurityAuthentication(ctx);
      if (dispatcher === undefined) dispatcher = ctx.getDispatcher();
      else ctx.setDispatcher(dispatcher);
    },
  } as unknown as KubeConfig;

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

  /**
   * List, then watch from the list's resourceVersion until the signal aborts
   * (the reflector; where the server streams initial events, one watch-list
   * request stands for both, see watchListServed): `items` gets the whole
   * set after the list (or the initial events) and after every change; a
   * 410 Gone relists, any failure is reported to `error` and retried with
   * back-off. As the reflector, a watch that ends (also cut off
   * by the server going away) or that cannot start because the connection is
   * refused or the server says 429 is started again from the last
   * resourceVersion, without a list: after an API server restart each watch
   * resumes where it was (a 410 then relists), rather than every reflector
   * listing again (the relist storm of apiserver-restart). Other failures
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
    const { ObjectSerializer } = await import('@kubernetes/client-node/dist/gen/models/ObjectSerializer.js');
    const { signal, on } = o;
    // Watches go over the connection pool every other request uses (HTTP/2: streams on one connection).
    // client-node's Watch takes the dispatcher from the kubeconfig's authentication, which makes a new
    // pool per watch: a TCP+TLS handshake for every watch request (bench/cluster-cpu.md).
    const watch = new k8s.Watch(watchConfig);
    const items = new Map<string, T>();
    let rv: string | undefined;
    let backoff = WATCH_RETRY_INITIAL_MS;
    /** A failure was reported to `error` since the set was last handed over. */
    let failed = false;
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
          emit();
        }
        requests.watch = (requests.watch ?? 0) + 1;
        const timeoutSeconds = watchTimeoutSeconds(Math.random, o.minWatchSeconds);
        // client-node's connect and inactivity timeout (private there; 30 s by default).
        (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = timeoutSeconds * 1000 + WATCH_GRACE_MS;
        // The watch-list's initial events build the set here; it replaces `items` at the bookmark that ends them.
        let initial: Map<string, T> | undefined = watchList ? new Map() : undefined;
        const params = watchList
          ? { fieldSelector: o.fieldSelector, sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true, timeoutSeconds }
          : { fieldSelector: o.fieldSelector, resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds };
        const gone = await new Promise<boolean>((resolve, reject) => {
          let expired = false;
          let ctrl: AbortController | undefined;
          // client-node hands over the watch's controller only once the response headers are in:
          // an abort before that ends this wait at once, and the watch as soon as its controller comes.
          const onAbort = () => {
            ctrl?.abort();
            resolve(expired);
          };
          if (signal.aborted) return resolve(false);
          signal.addEventListener('abort', onAbort, { once: true });
          watch
            .watch(
              o.path,
              // The server ends the watch after timeoutSeconds (before the client's inactivity timeout); then it resumes from rv.
              params,
              (type: string, obj: unknown) => {
                const m = obj as { code?: number; metadata?: { resourceVersion?: string; uid?: string; annotations?: Record<string, string> } };
                if (type === 'ERROR') {
                  if (m.code === 410) expired = true;
                  else {
                    serverError = true;
                    reject(new Error(`watch error: ${JSON.stringify(obj)}`));
                  }
                  return;
                }
                if (initial !== undefined) {
                  // The initial events carry each object's own resourceVersion, not the set's: the watch can
                  // resume only from the bookmark that ends them (cut off before it, the set is asked for again).
                  if (type === 'BOOKMARK') {
                    if (m.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true') return;
                    items.clear();
                    for (const [k, v] of initial) items.set(k, v);
                    initial = undefined;
                    rv = m.metadata.resourceVersion;
                    failed = false;
                    emit();
                    return;
                  }
                  const item = ObjectSerializer.deserialize(obj, o.type, '') as T;
                  if (type === 'DELETED') initial.delete(item.metadata?.uid ?? '');
                  else initial.set(item.metadata?.uid ?? '', item);
                  return;
                }
                if (m.metadata?.resourceVersion) rv = m.metadata.resourceVersion;
                if (type === 'BOOKMARK') return;
                const item = ObjectSerializer.deserialize(obj, o.type, '') as T;
                if (type === 'DELETED') items.delete(item.metadata?.uid ?? '');
                else items.set(item.metadata?.uid ?? '', item);
                emit();
              },
              (err: unknown) => {
                signal.removeEventListener('abort', onAbort);
                if (err && !signal.aborted) reject(err);
                else resolve(expired);
              },
            )
            .then(
              (c) => {
                ctrl = c;
                if (signal.aborted) return c.abort();
                // The response headers are in: the watch runs.
                started = true;
                backoff = WATCH_RETRY_INITIAL_MS;
                if (failed && initial === undefined) {
                  failed = false;
                  emit();
                }
              },
              (err: unknown) => {
                signal.removeEventListener('abort', onAbort);
                reject(err);
              },
            );
        });
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
        // The reflector's: a watch cut off after it started, or one refused (connection refused, 429), resumes
        // from its resourceVersion; any other failure (an ERROR event, a list or watch request answered with
        // an error) starts again from a fresh list.
        const resume = rv !== undefined && !serverError && (started || e.refused || e.status === 429);
        if (!resume) rv = undefined;
        failed = true;
        on.error(e.message);
        await pause(backoff, signal);
        backoff = Math.min(backoff * 2, WATCH_RETRY_MAX_MS);
      }
    }
  }

  return {
    server,
    requests,
    getNode: (name, signal) => orNull(call(`get node ${name}`, () => core.readNode({ name }, options(signal)))),
    createNode: (node, signal) => call(`create node ${node.metadata?.name}`, () => core.createNode({ body: node }, options(signal))),
    patchNodeMetadata: (name, meta, signal) =>
      call(`patch node ${name}`, () =>
        core.patchNodeStatus({ name, body: { metadata: meta } }, options(signal, k8s.PatchStrategy.StrategicMergePatch)),
      ),
    patchNodeStatus: (name, status: V1NodeStatus, signal) =>
      call(`patch node ${name} status`, () =>
        core.patchNodeStatus({ name, body: { status: JSON.parse(JSON.stringify(status)) as unknown } }, options(signal, k8s.PatchStrategy.MergePatch)),
      ),
    getLease: (name, signal) =>
      orNull(call(`get lease ${NODE_LEASE_NAMESPACE}/${name}`, () => coordination.readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE }, options(signal)))),
    createLease: (lease: V1Lease, signal) =>
      call(`create lease ${NODE_LEASE_NAMESPACE}/${lease.metadata?.name}`, () =>
        coordination.createNamespacedLease({ namespace: NODE_LEASE_NAMESPACE, body: lease }, options(signal)),
      ),
    updateLease: (lease: V1Lease, signal) =>
      call(`update lease ${NODE_LEASE_NAMESPACE}/${lease.metadata?.name}`, () =>
        coordination.replaceNamespacedLease({ name: lease.metadata?.name ?? '', namespace: NODE_LEASE_NAMESPACE, body: lease }, options(signal)),
      ),
    listNodePods: async (nodeName, signal) =>
      (
        await call(`list pods on node ${nodeName}`, () =>
          core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeName}` }, options(signal)),
        )
      ).items,
    watchNodePods: (nodeName, on, signal) => {
      const fieldSelector = `spec.nodeName=${nodeName}`;
      return listWatch<V1Pod>({
        path: '/api/v1/pods',
        fieldSelector,
        type: 'V1Pod',
        what: `pods on node ${nodeName}`,
        list: (s) => core.listPodForAllNamespaces({ fieldSelector }, options(s)),
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
        list: (s) => core.listServiceForAllNamespaces({ fieldSelector }, options(s)),
        on,
        signal,
      });
    },
    watchObject: (kind, namespace, name, on, signal) => {
      const fieldSelector = `metadata.name=${name}`;
      const singular = kind === 'configmaps' ? 'configmap' : 'secret';
      const list = kind === 'configmaps'
        ? (s: AbortSignal) => core.listNamespacedConfigMap({ namespace, fieldSelector }, options(s))
        : (s: AbortSignal) => core.listNamespacedSecret({ namespace, fieldSelector }, options(s));
      return listWatch<V1ConfigMap | V1Secret>({
        path: `/api/v1/namespaces/${namespace}/${kind}`,
        fieldSelector,
        type: kind === 'configmaps' ? 'V1ConfigMap' : 'V1Secret',
        what: `${singular} ${namespace}/${name}`,
        minWatchSeconds: OBJECT_WATCH_MIN_TIMEOUT_SECONDS,
        list,
        on,
        signal,
      });
    },
    createServiceAccountToken: async (namespace, serviceAccount, spec, signal) => {
      const tr = await call(`create token for serviceaccount ${namespace}/${serviceAccount}`, () =>
        core.createNamespacedServiceAccountToken(
          { name: serviceAccount, namespace, body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec } },
          options(signal),
        ),
      );
      const token = tr.status?.token ?? '';
      const exp = tr.status?.expirationTimestamp;
      if (token === '' || exp === undefined) throw new ApiServerError(`API server ${server}: create token for serviceaccount ${namespace}/${serviceAccount}: the TokenRequest came back without a token`);
      return { token, expirationTimestamp: new Date(exp) };
    },
    createPod: (pod, signal) =>
      call(`create pod ${pod.metadata?.namespace}/${pod.metadata?.name}`, () =>
        core.createNamespacedPod({ namespace: pod.metadata?.namespace ?? 'default', body: pod }, options(signal)),
      ),
    deletePod: async (namespace, name, uid, signal) => {
      await call(`delete pod ${namespace}/${name}`, () =>
        core.deleteNamespacedPod({ name, namespace, body: { gracePeriodSeconds: 0, preconditions: { uid } } }, options(signal)),
      );
    },
    patchPodStatus: (namespace, name, uid, status, signal) =>
      call(`patch pod ${namespace}/${name} status`, () =>
        core.patchNamespacedPodStatus(
          { name, namespace, body: JSON.parse(JSON.stringify({ metadata: { uid }, status })) as unknown },
          options(signal, k8s.PatchStrategy.MergePatch),
        ),
      ),
    createEvent: (namespace, event, signal) =>
      call(`create event ${namespace}/${event.metadata?.name}`, () => core.createNamespacedEvent({ namespace, body: event }, options(signal))),
    patchEvent: (namespace, name, patch, signal) =>
      call(`patch event ${namespace}/${name}`, () =>
        core.patchNamespacedEvent(
          { name, namespace, body: { count: patch.count, lastTimestamp: patch.lastTimestamp.toISOString(), message: patch.message } },
          options(signal, k8s.PatchStrategy.StrategicMergePatch),
        ),
      ),
    // The kubelet server's reviews (its node identity may create both: the Node authorizer's rules).
    reviewToken: async (token, signal) => {
      const r = await call('create tokenreview', () =>
        authentication.createTokenReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } }, options(signal)),
      );
      const u = r.status?.user;
      return {
        authenticated: r.status?.authenticated === true,
        ...(u?.username ? { user: { name: u.username, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups ?? [], ...(u.extra ? { extra: u.extra } : {}) } } : {}),
      };
    },
    reviewNodeAccess: async (q, signal) => {
      const r = await call('create subjectaccessreview', () =>
        authorization.createSubjectAccessReview(
          {
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
          },
          options(signal),
        ),
      );
      return r.status?.allowed === true;
    },
    reloadCredentials: () => {
      // The next request makes a new pool from the kubeconfig, reading its certificate files anew. The old
      // pool is left to finish what it carries (a request may still be handed it); its idle connections
      // close after undici's keep-alive timeout.
      dispatcher = undefined;
    },
    close: () => {
      // client-node keeps no connection we own (undici's global dispatcher).
    },
  };
}

export type { V1Node };
