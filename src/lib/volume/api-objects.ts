/**
 * ConfigMaps, Secrets and service account tokens of API pods, from the API
 * server (the kubelet's watch-based configmap/secret managers and its token
 * manager, pkg/kubelet/util/manager and pkg/kubelet/token).
 *
 * - One watch per referenced object (fieldSelector metadata.name=NAME in the
 *   pod's namespace), started when the first pod referencing it is
 *   registered and stopped when the last such pod goes. The Node authorizer
 *   lets a node read exactly the objects its pods reference, so nothing
 *   else is ever asked for.
 * - A read waits for the object's watch to have listed once (the reflector's
 *   HasSynced) and answers from that cache; when the watch fails later the
 *   last known object is kept, as the kubelet keeps it.
 * - Idle watches are stopped, as the kubelet's watch-based manager stops
 *   them: once a minute, a watch that has listed and has not been read for
 *   5 × the resync interval (5 minutes) ends. A read restarts it and waits
 *   for its new list, so nothing is answered from a stale cache (the
 *   kubelet may answer from the stopped reflector's store; klet reads
 *   afresh). Reads are the volume manager's (every resync, so a volume's
 *   object stays watched) and a container's environment at its start
 *   (readForContainer), so an object only an env var references is watched
 *   while containers start and not for the pod's whole life. ready(), asked
 *   at every pod sync, is not a read: it waits only for running watches.
 * - A watch whose object is immutable (`immutable: true`) is stopped once it
 *   has been read and never restarted: the object cannot change (the
 *   kubelet's).
 * - Tokens (TokenRequest, bound to the pod) are cached per pod, service
 *   account, audience and lifetime, and requested again at 80% of their TTL
 *   or after 24 h (the kubelet's requiresRefresh).
 *
 * Nothing here is logged with an object's data or a token.
 */
import type {
  V1ConfigMap,
  V1Container,
  V1EphemeralContainer,
  V1Pod,
  V1Secret,
  V1ServiceAccountTokenProjection,
  V1TokenRequestSpec,
} from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import type { LocalObjects } from '../kuberuntime/env.js';
import { type ObjectSource, VolumeSetupError } from './plugins.js';

export type ObjectKind = 'configmaps' | 'secrets';

/** What the object managers need from the API server (implemented in lib/kube/node-api.ts). */
export interface ObjectApi {
  /**
   * List and watch the objects named `name` in `namespace` until the signal
   * aborts: `items` gets the whole (0 or 1 long) set after each list and
   * change, `error` each failure (then it retries). Never rejects.
   */
  watchObject(
    kind: ObjectKind,
    namespace: string,
    name: string,
    on: { items(items: Array<V1ConfigMap | V1Secret>): void; error(message: string): void },
    signal: AbortSignal,
  ): Promise<void>;
  /** POST serviceaccounts/NAME/token. */
  createServiceAccountToken(
    namespace: string,
    serviceAccount: string,
    spec: V1TokenRequestSpec,
    signal: AbortSignal,
  ): Promise<{ token: string; expirationTimestamp: Date }>;
}

/** The ConfigMaps and Secrets a pod references, by name (the kubelet's VisitPodConfigmapNames / VisitPodSecretNames, less image pull secrets). */
export function podObjectRefs(pod: V1Pod): { configMaps: Set<string>; secrets: Set<string> } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  const add = (set: Set<string>, n: string | undefined) => {
    if (n) set.add(n);
  };
  for (const v of pod.spec?.volumes ?? []) {
    add(configMaps, v.configMap?.name);
    add(secrets, v.secret?.secretName);
    for (const s of v.projected?.sources ?? []) {
      add(configMaps, s.configMap?.name);
      add(secrets, s.secret?.name);
    }
  }
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? []), ...(pod.spec?.ephemeralContainers ?? [])]) {
    addEnvRefs(c, add, configMaps, secrets);
  }
  return { configMaps, secrets };
}

/** The ConfigMaps and Secrets one container's env and envFrom reference, by name. */
export function containerEnvRefs(c: V1Container | V1EphemeralContainer): { configMaps: Set<string>; secrets: Set<string> } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  addEnvRefs(c, (set, n) => (n ? void set.add(n) : undefined), configMaps, secrets);
  return { configMaps, secrets };
}

function addEnvRefs(
  c: V1Container | V1EphemeralContainer,
  add: (set: Set<string>, n: string | undefined) => void,
  configMaps: Set<string>,
  secrets: Set<string>,
): void {
  for (const f of c.envFrom ?? []) {
    add(configMaps, f.configMapRef?.name);
    add(secrets, f.secretRef?.name);
  }
  for (const e of c.env ?? []) {
    add(configMaps, e.valueFrom?.configMapKeyRef?.name);
    add(secrets, e.valueFrom?.secretKeyRef?.name);
  }
}

/** How long a read waits for a new watch's first list before it fails (the pod worker retries). */
const DEFAULT_SYNC_TIMEOUT_MS = 10_000;
/** The kubelet's: a watch not read for 5 × the resync interval (--sync-frequency, 1 m) is stopped. */
export const DEFAULT_MAX_IDLE_MS = 5 * 60_000;
/** The kubelet checks for idle watches every minute. */
const IDLE_CHECK_MS = 60_000;
/** The kubelet's token manager: refresh at 80% of the TTL, and at most every 24 h. */
const TOKEN_MAX_TTL_MS = 24 * 3600 * 1000;
const TOKEN_REFRESH_FRACTION = 0.2;

interface WatchEntry {
  kind: ObjectKind;
  namespace: string;
  name: string;
  pods: Set<string>;
  ctrl: AbortController;
  /** Listed at least once since the manager first watched it: `object` is what the server had. */
  synced: boolean;
  /** Listed since the watch last (re)started: reads answer from `object`. */
  fresh: boolean;
  /** Stopped (idle or immutable); a read restarts it unless immutable. */
  stopped: boolean;
  immutable: boolean;
  /** The last read (get, readForContainer), ms: an idle watch is stopped. */
  lastRead: number;
  object: V1ConfigMap | V1Secret | undefined;
  /** The last failure before the first successful list since the watch (re)started. */
  error: string | undefined;
  waiters: Array<() => void>;
}

interface CachedToken {
  token: string;
  issuedAt: number;
  expiresAt: number;
}

export interface ApiObjectManagerOptions {
  api: ObjectApi;
  /** An object some pod references changed (or appeared, or went). */
  onChange?: () => void;
  /** Warnings (watch failures); never carry object data or tokens. */
  onWarning?: (message: string) => void;
  signal: AbortSignal;
  syncTimeoutMs?: number;
  /** A watch not read for this long is stopped (default 5 minutes, 5 × the kubelet's resync interval). */
  maxIdleMs?: number;
  /** How often idle watches are looked for (default every minute). */
  idleCheckMs?: number;
  now?: () => number;
}

function watchKey(kind: ObjectKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

export class ApiObjectManager {
  private readonly watches = new Map<string, WatchEntry>();
  /** Pod UID → the watch keys it holds. */
  private readonly pods = new Map<string, Set<string>>();
  private readonly tokens = new Map<string, CachedToken>();
  private readonly inflight = new Map<string, Promise<string>>();

  constructor(private readonly o: ApiObjectManagerOptions) {
    const idleCheck = setInterval(() => this.stopIdleWatches(), o.idleCheckMs ?? IDLE_CHECK_MS);
    idleCheck.unref();
    o.signal.addEventListener('abort', () => {
      clearInterval(idleCheck);
      for (const w of this.watches.values()) w.ctrl.abort();
    }, { once: true });
  }

  private now(): number {
    return this.o.now?.() ?? Date.now();
  }

  /** Watches running now (for tests and status): kind/namespace/name. */
  watching(): string[] {
    return [...this.watches].filter(([, w]) => !w.stopped).map(([k]) => k).sort();
  }

  /** The kubelet's shutdownIdleReflectors: stop each watch that has listed and has not been read for maxIdleMs. */
  stopIdleWatches(): void {
    const now = this.now();
    const maxIdleMs = this.o.maxIdleMs ?? DEFAULT_MAX_IDLE_MS;
    for (const w of this.watches.values()) if (!w.stopped && w.fresh && now - w.lastRead > maxIdleMs) this.stop(w);
  }

  private stop(w: WatchEntry): void {
    w.stopped = true;
    w.ctrl.abort();
  }

  /** A read: the watch counts as used now, and a stopped one (not immutable) starts again and lists afresh. */
  private touch(w: WatchEntry): void {
    w.lastRead = this.now();
    // Not once klet is stopping (the kubelet's): the read answers from what was listed.
    if (!w.stopped || w.immutable || this.o.signal.aborted) return;
    w.stopped = false;
    w.fresh = false;
    w.error = undefined;
    w.ctrl = new AbortController();
    this.run(w);
  }

  /** After a read: an immutable object's watch is no longer needed. */
  private afterRead(w: WatchEntry): void {
    if (w.object?.immutable === true && !w.stopped) {
      w.immutable = true;
      this.stop(w);
    }
  }

  /** Start watching what the pod references, stop watching what it no longer does (the kubelet's RegisterPod). */
  registerPod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const ns = pod.metadata?.namespace ?? 'default';
    const refs = podObjectRefs(pod);
    const want = new Set<string>([
      ...[...refs.configMaps].map((n) => watchKey('configmaps', ns, n)),
      ...[...refs.secrets].map((n) => watchKey('secrets', ns, n)),
    ]);
    const had = this.pods.get(uid) ?? new Set<string>();
    for (const key of want) {
      if (had.has(key)) continue;
      let w = this.watches.get(key);
      if (w === undefined) {
        const [kind, namespace, name] = key.split('/') as [ObjectKind, string, string];
        w = this.startWatch(kind, namespace, name);
        this.watches.set(key, w);
      }
      w.pods.add(uid);
    }
    for (const key of had) if (!want.has(key)) this.release(key, uid);
    this.pods.set(uid, want);
  }

  /** The pod is gone: drop its watches no other pod needs, and its tokens (the kubelet's UnregisterPod, DeleteServiceAccountToken). */
  unregisterPod(uid: string): void {
    for (const key of this.pods.get(uid) ?? []) this.release(key, uid);
    this.pods.delete(uid);
    for (const k of [...this.tokens.keys()]) if (k.startsWith(`${uid}/`)) this.tokens.delete(k);
  }

  private release(key: string, uid: string): void {
    const w = this.watches.get(key);
    if (w === undefined) return;
    w.pods.delete(uid);
    if (w.pods.size > 0) return;
    w.ctrl.abort();
    this.watches.delete(key);
    for (const wake of w.waiters.splice(0)) wake();
  }

  private startWatch(kind: ObjectKind, namespace: string, name: string): WatchEntry {
    const w: WatchEntry = {
      kind,
      namespace,
      name,
      pods: new Set(),
      ctrl: new AbortController(),
      synced: false,
      fresh: false,
      stopped: false,
      immutable: false,
      lastRead: this.now(),
      object: undefined,
      error: undefined,
      waiters: [],
    };
    this.run(w);
    return w;
  }

  /** Runs the entry's watch until its controller (or the manager's signal) aborts. */
  private run(w: WatchEntry): void {
    const ctrl = w.ctrl;
    const signal = AbortSignal.any([ctrl.signal, this.o.signal]);
    void this.o.api
      .watchObject(
        w.kind,
        w.namespace,
        w.name,
        {
          items: (items) => {
            if (ctrl.signal.aborted) return; // a stopped watch's late answer
            const next = items.find((i) => i.metadata?.name === w.name);
            // The first list changes something only when it found the object;
            // a restarted watch's list, only when the object changed meanwhile.
            const changed = w.synced ? next?.metadata?.resourceVersion !== w.object?.metadata?.resourceVersion : next !== undefined;
            w.object = next;
            w.error = undefined;
            w.synced = true;
            w.fresh = true;
            for (const wake of w.waiters.splice(0)) wake();
            if (changed) this.o.onChange?.();
          },
          error: (message) => {
            if (ctrl.signal.aborted) return;
            if (!w.fresh) w.error = message;
            for (const wake of w.waiters.splice(0)) wake();
            this.o.onWarning?.(message);
          },
        },
        signal,
      )
      .catch((err: unknown) => this.o.onWarning?.(errorMessage(err)));
  }

  /** Wait until the watch has listed since it (re)started, failed once, gone, or the timeout passed. */
  private async synced(w: WatchEntry, signal?: AbortSignal): Promise<void> {
    if (w.fresh || w.error !== undefined) return;
    const timeoutMs = this.o.syncTimeoutMs ?? DEFAULT_SYNC_TIMEOUT_MS;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      w.waiters.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** The object from its watch (undefined: it does not exist). Throws when the pod did not register it or its watch never listed. */
  async get(kind: ObjectKind, namespace: string, name: string, signal?: AbortSignal): Promise<V1ConfigMap | V1Secret | undefined> {
    const w = this.watches.get(watchKey(kind, namespace, name));
    if (w === undefined) throw new VolumeSetupError(`object "${namespace}"/"${name}" not registered`);
    return this.read(w, signal, (m) => new VolumeSetupError(m));
  }

  /** One read of a registered object: touch, wait for a fresh list, answer (or `fail` with the kubelet's message). */
  private async read(w: WatchEntry, signal: AbortSignal | undefined, fail: (message: string) => Error): Promise<V1ConfigMap | V1Secret | undefined> {
    this.touch(w);
    if (!w.stopped) await this.synced(w, signal);
    if (w.stopped ? w.synced : w.fresh) {
      this.afterRead(w);
      return w.object;
    }
    const singular = w.kind === 'configmaps' ? 'configmap' : 'secret';
    throw fail(`failed to sync ${singular} cache: ${w.error ?? 'timed out waiting for the condition'}`);
  }

  /**
   * Wait until every running watch of the pod's objects has listed once (or
   * failed): then objects() answers for it. Not a read: a stopped watch is
   * left stopped (its object is read afresh when a container needs it).
   */
  async ready(pod: V1Pod, signal?: AbortSignal): Promise<void> {
    const keys = this.pods.get(pod.metadata?.uid ?? '') ?? new Set<string>();
    await Promise.all(
      [...keys].map((k) => this.watches.get(k)).map((w) => (w === undefined || w.stopped ? undefined : this.synced(w, signal))),
    );
  }

  /**
   * The objects a container's environment references, read now (the
   * kubelet's GetConfigMap/GetSecret in makeEnvironmentVariables): each
   * counts as used, a stopped watch restarts and lists afresh. Then the
   * pod's objects as objects() gives them. Fails with the kubelet's
   * message when a watch cannot list in time.
   */
  async readForContainer(pod: V1Pod, container: V1Container, signal: AbortSignal | undefined, fail: (message: string) => Error): Promise<LocalObjects> {
    const ns = pod.metadata?.namespace ?? 'default';
    const refs = containerEnvRefs(container);
    const keys = [
      ...[...refs.configMaps].map((n) => watchKey('configmaps', ns, n)),
      ...[...refs.secrets].map((n) => watchKey('secrets', ns, n)),
    ];
    const held = this.pods.get(pod.metadata?.uid ?? '');
    await Promise.all(
      keys.filter((k) => held?.has(k)).map((k) => this.watches.get(k)).map((w) => (w === undefined ? undefined : this.read(w, signal, fail))),
    );
    return this.objects(pod);
  }

  /** The pod's referenced ConfigMaps and Secrets known now (for its containers' environment). */
  objects(pod: V1Pod): LocalObjects {
    const out: LocalObjects = { configMaps: [], secrets: [] };
    for (const key of this.pods.get(pod.metadata?.uid ?? '') ?? []) {
      const w = this.watches.get(key);
      if (w?.object === undefined) continue;
      if (w.kind === 'configmaps') out.configMaps.push(w.object as V1ConfigMap);
      else out.secrets.push(w.object as V1Secret);
    }
    return out;
  }

  /** An ObjectSource for one pod's volumes. */
  source(pod: V1Pod, signal?: AbortSignal): ObjectSource {
    return {
      configMap: async (ns, name) => (await this.get('configmaps', ns, name, signal)) as V1ConfigMap | undefined,
      secret: async (ns, name) => (await this.get('secrets', ns, name, signal)) as V1Secret | undefined,
      serviceAccountToken: (p, src) => this.token(p, src, signal),
    };
  }

  /**
   * A token for the pod's service account (TokenRequest bound to the pod),
   * from the cache unless it is due for a refresh. A failed refresh keeps
   * using the cached token while it is still valid (the kubelet's).
   */
  async token(pod: V1Pod, src: V1ServiceAccountTokenProjection, signal?: AbortSignal): Promise<string> {
    const uid = pod.metadata?.uid ?? '';
    const ns = pod.metadata?.namespace ?? 'default';
    const sa = pod.spec?.serviceAccountName || 'default';
    const audience = src.audience ?? '';
    const expirationSeconds = src.expirationSeconds ?? 3600;
    const key = `${uid}/${ns}/${sa}/${audience}/${expirationSeconds}`;
    const cached = this.tokens.get(key);
    const now = this.now();
    if (cached !== undefined && !requiresRefresh(cached, now)) return cached.token;
    const running = this.inflight.get(key);
    if (running !== undefined) return running;
    const p = (async () => {
      try {
        const spec: V1TokenRequestSpec = {
          audiences: audience === '' ? undefined : [audience],
          expirationSeconds,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name ?? '', uid },
        };
        const r = await this.o.api.createServiceAccountToken(ns, sa, spec, signal ?? this.o.signal);
        const expiresAt = r.expirationTimestamp.getTime();
        // The server may shorten the lifetime; the issue time follows from the lifetime asked for (the kubelet's).
        this.tokens.set(key, { token: r.token, issuedAt: expiresAt - expirationSeconds * 1000, expiresAt });
        return r.token;
      } catch (err) {
        if (cached !== undefined && this.now() < cached.expiresAt) {
          this.o.onWarning?.(`refreshing the token of serviceaccount ${ns}/${sa} for pod ${ns}/${pod.metadata?.name ?? ''}: ${errorMessage(err)} (the current token is still valid)`);
          return cached.token;
        }
        throw new VolumeSetupError(`failed to fetch token: ${errorMessage(err)}`);
      } finally {
        this.inflight.delete(key);
      }
    })();
    this.inflight.set(key, p);
    return p;
  }
}

/** The kubelet's token manager requiresRefresh, without its jitter: past 80% of the TTL, or older than 24 h. */
export function requiresRefresh(t: { issuedAt: number; expiresAt: number }, now: number): boolean {
  if (now >= t.issuedAt + TOKEN_MAX_TTL_MS) return true;
  return now >= t.expiresAt - (t.expiresAt - t.issuedAt) * TOKEN_REFRESH_FRACTION;
}
