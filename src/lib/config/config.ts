/**
 * PodConfig: the kubelet's pkg/kubelet/config config.go. Pod sources (the
 * manifest directory, the manifest URL, ...) each deliver full snapshots;
 * PodConfig keeps per source the pods it last accepted (podStorage, SET
 * semantics) and turns every snapshot into the incremental updates the
 * sync loop consumes: REMOVE, ADD, UPDATE, RECONCILE, in that order, per
 * source, on one Channel.
 *
 * Differences from the kubelet, all deliberate:
 *
 * - Identity across edits. A static pod's UID is a hash of its manifest, so
 *   the kubelet sees an edited manifest as a new pod: it kills the old one
 *   and starts the new one, every container, with fresh emptyDirs. Here a
 *   pod keeps its UID for as long as its source keeps wanting a pod of that
 *   namespace/name: the edited pod arrives as an UPDATE with metadata.uid
 *   (and the config.hash annotation) rewritten to the running pod's UID, so
 *   the sync loop restarts only the containers whose spec changed. The same
 *   holds across klet restarts through seedIdentities(). `keepIdentity`
 *   can opt out per edit. Consequence for consumers: an UPDATE may change
 *   any part of the spec, not only the fields the API server lets change.
 * - A name wanted by two sources goes to the source that has it already
 *   (so a second source never kills a running pod), else to the source
 *   registered first; the other source's pod is reported and ignored until
 *   the name is free, and then added without the source having to resend.
 * - Errors are state, not only log lines: errors() says what is wrong with
 *   each source now, and a fixed problem disappears from it.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../errors.js';
import type { LocalObjects } from '../kuberuntime/env.js';
import { log } from '../log.js';
import { cloneModel } from '../pod/defaults.js';
import { type LoadedPod, ManifestError, type ManifestSource } from '../pod/manifest.js';
import { CONFIG_HASH_ANNOTATION, CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION, apiObjectReference } from '../pod/static-pod.js';
import { API_SOURCE } from './api.js';
import { canonicalJson, jsonEqual } from '../util/json.js';
import { Channel } from '../util/channel.js';
import { type PodSource, type SourceSink, type SourceSnapshot, objectKey } from './source.js';

/** kubetypes.PodOperation, without SET/DELETE (sources deliver snapshots; static pods are never gracefully deleted by a source). */
export type PodOperation = 'ADD' | 'UPDATE' | 'REMOVE' | 'RECONCILE';

/** One change to the pods of one source. Pods are copies: consumers may keep and mutate them. */
export interface PodUpdate {
  op: PodOperation;
  source: string;
  pods: V1Pod[];
}

/** Annotations the kubelet sets for itself: they never make two pods differ (config.go localAnnotations). */
const LOCAL_ANNOTATIONS: readonly string[] = [CONFIG_SOURCE_ANNOTATION, CONFIG_SEEN_ANNOTATION, 'kubernetes.io/config.mirror'];

export interface PodConfigOptions {
  /**
   * Whether an edited pod (same source and namespace/name, new UID) keeps
   * the UID of the pod it replaces. The default keeps it always. Return
   * false for edits the sync loop cannot apply in place, to have them
   * arrive as REMOVE of the old pod and ADD of the new one instead.
   */
  keepIdentity?: (current: V1Pod, next: V1Pod) => boolean;
  /**
   * Cluster mode: a static pod (any source but the API server) that
   * references API objects is not run, and its manifest gets the kubelet's
   * error "static pods may not reference RESOURCE". In standalone mode klet
   * lets static pods read ConfigMaps and Secrets from local files (no API
   * server is involved), where the kubelet rejects them too.
   */
  rejectStaticApiReferences?: boolean;
}

/** The key of seedIdentities(): `source|namespace/name`, the pod's full (node-suffixed) name. */
export function identityKey(source: string, namespace: string, name: string): string {
  return `${source}|${namespace}/${name}`;
}

interface Entry {
  pod: V1Pod;
  /** namespace/name. */
  key: string;
  manifest: ManifestSource;
  /** The source's pod it was last compared with: the same object again (unchanged) needs no copy and no compare. */
  loaded?: LoadedPod;
}

interface SourceState {
  readonly name: string;
  readonly runner: PodSource | undefined;
  /** The last snapshot; undefined until the first (the source is not "seen" yet). */
  desired: LoadedPod[] | undefined;
  objects: LocalObjects;
  /** What the source reported with its last read. */
  sourceErrors: ManifestError[];
  /** What PodConfig found while merging: names or UIDs another pod has. */
  conflicts: ManifestError[];
  /** Accepted pods by UID, in order of arrival. */
  readonly current: Map<string, Entry>;
  /** When the source last reported (a snapshot or a failure), ms since the epoch; undefined before. */
  lastReadAt?: number;
  /**
   * The snapshot merged last, while no failure came after it. A source that
   * found nothing changed hands the same object again (the file source's
   * periodic re-read), and merging it again would change nothing.
   */
  merged?: SourceSnapshot;
}

/** One source as the local API's /node reports it. */
export interface SourceStatus {
  name: string;
  /** When the source last reported, ms since the epoch; null before its first read. */
  lastReadAt: number | null;
  /** Its current problems, one line each ([] when fine). */
  errors: string[];
}

interface Planned {
  pod: V1Pod;
  key: string;
  manifest: ManifestSource;
  loaded: LoadedPod;
  /** The source handed the very object the running entry was last compared with (pod is then the entry's own). */
  unchanged: boolean;
  /**
   * `pod` is the source's own object, not a copy: apply() copies what it keeps. A pod whose
   * status alone changed (most watch events of a start) then costs a copy of its status, not
   * two copies of the whole pod.
   */
  borrowed: boolean;
}

/** True when the sync loop must act: the kubelet's podsDifferSemantically. */
function differSemantically(a: V1Pod, b: V1Pod): boolean {
  const am = a.metadata ?? {};
  const bm = b.metadata ?? {};
  return (
    !jsonEqual(a.spec, b.spec) ||
    !jsonEqual(am.labels ?? {}, bm.labels ?? {}) ||
    !jsonEqual(am.deletionTimestamp, bm.deletionTimestamp) ||
    am.deletionGracePeriodSeconds !== bm.deletionGracePeriodSeconds ||
    !jsonEqual(withoutLocal(am.annotations), withoutLocal(bm.annotations))
  );
}

function withoutLocal(annotations: Record<string, string> | undefined): Record<string, string> {
  const out = { ...annotations };
  for (const k of LOCAL_ANNOTATIONS) delete out[k];
  return out;
}

/** A copy of `pod` with metadata.uid and the config.hash annotation set to `uid`. */
function withUID(pod: V1Pod, uid: string): V1Pod {
  const out = cloneModel(pod);
  const metadata = (out.metadata ??= {});
  metadata.uid = uid;
  metadata.annotations = { ...metadata.annotations, [CONFIG_HASH_ANNOTATION]: uid };
  return out;
}

/**
 * The merged pod configuration of the node. Register sources with
 * addSource() (or feed one yourself through register()), start(), and
 * consume `updates`.
 */
export class PodConfig {
  /** Every change, in order. One consumer (the sync loop). */
  readonly updates = new Channel<PodUpdate>();

  private readonly sources = new Map<string, SourceState>();
  private readonly seeds = new Map<string, string>();
  private readonly keepIdentity: (current: V1Pod, next: V1Pod) => boolean;
  private readonly rejectStaticApiReferences: boolean;
  /** Error lines already logged, per source, so a problem is logged once, not on every re-read. */
  private readonly logged = new Map<string, Set<string>>();
  private controller: AbortController | undefined;
  private running: Promise<void>[] = [];
  private readonly objectListeners = new Set<(source: string) => void>();

  constructor(opts: PodConfigOptions = {}) {
    this.keepIdentity = opts.keepIdentity ?? (() => true);
    this.rejectStaticApiReferences = opts.rejectStaticApiReferences === true;
  }

  /** Add a source to run on start(). Names must be unique. */
  addSource(source: PodSource): void {
    if (this.controller !== undefined) throw new Error(`pod source ${source.name}: sources must be added before start()`);
    this.addState(source.name, source);
  }

  /**
   * Register a source that the caller feeds itself, and get its sink. It
   * counts for sourcesReady() like any other source.
   */
  register(name: string): SourceSink {
    this.addState(name, undefined);
    return this.sink(name);
  }

  /**
   * UIDs of pods that already run (found in the runtime when klet starts):
   * `identityKey(source, namespace, name)` → UID. A pod of that source and
   * name in the source's first snapshot takes the seeded UID, so that an
   * edit made while klet was down restarts only what changed, like an edit
   * made while it runs. Seeds a first snapshot does not use are dropped: a
   * pod that comes back later is a new pod.
   */
  seedIdentities(map: ReadonlyMap<string, string>): void {
    for (const [key, uid] of map) if (uid !== '') this.seeds.set(key, uid);
  }

  /** Start every added source. Stops when `signal` aborts or on stop(). */
  start(signal?: AbortSignal): void {
    if (this.controller !== undefined) throw new Error('PodConfig already started');
    const controller = new AbortController();
    this.controller = controller;
    const stopped = signal === undefined ? controller.signal : AbortSignal.any([signal, controller.signal]);
    for (const state of this.sources.values()) {
      if (state.runner !== undefined) this.running.push(this.runSource(state.name, state.runner, stopped));
    }
  }

  /** Stop the sources and wait until they have released their watchers and timers. */
  async stop(): Promise<void> {
    this.controller?.abort();
    await Promise.allSettled(this.running);
    this.running = [];
  }

  /**
   * True once every source has delivered a snapshot: until then PodConfig
   * does not know every pod the node should run, and the sync loop must
   * not remove running pods that no source (yet) claims.
   */
  sourcesReady(): boolean {
    for (const s of this.sources.values()) if (s.desired === undefined) return false;
    return true;
  }

  /** Current problems per source (every registered source, [] when fine). */
  errors(): Map<string, ManifestError[]> {
    const out = new Map<string, ManifestError[]>();
    for (const s of this.sources.values()) out.set(s.name, [...s.sourceErrors, ...s.conflicts]);
    return out;
  }

  /** Every source with its last read and its current problems. */
  sourceStatus(): SourceStatus[] {
    return [...this.sources.values()].map((s) => ({
      name: s.name,
      lastReadAt: s.lastReadAt ?? null,
      errors: [...s.sourceErrors, ...s.conflicts].map((e) => e.toString()),
    }));
  }

  /**
   * Call `listener` whenever a source's ConfigMaps or Secrets change (the
   * volume manager re-projects volumes). Returns the unsubscribe function.
   */
  watchObjects(listener: (source: string) => void): () => void {
    this.objectListeners.add(listener);
    return () => this.objectListeners.delete(listener);
  }

  /** The ConfigMaps and Secrets of a source, for its pods' env and volumes. */
  objects(source: string): LocalObjects {
    const s = this.sources.get(source);
    return s === undefined ? { configMaps: [], secrets: [] } : { configMaps: [...s.objects.configMaps], secrets: [...s.objects.secrets] };
  }

  /** Copies of the current pods, of one source or of all. */
  pods(source?: string): V1Pod[] {
    const out: V1Pod[] = [];
    for (const s of this.sources.values()) {
      if (source !== undefined && s.name !== source) continue;
      for (const e of s.current.values()) out.push(cloneModel(e.pod));
    }
    return out;
  }

  /**
   * A copy of the current pod of this namespace and name (the first source's that has one), or
   * undefined: pods() copies every pod, and the kubelet server looks one up per request.
   */
  pod(namespace: string, name: string): V1Pod | undefined {
    for (const s of this.sources.values()) {
      for (const e of s.current.values()) {
        const m = e.pod.metadata;
        if (m?.name === name && (m.namespace ?? 'default') === namespace) return cloneModel(e.pod);
      }
    }
    return undefined;
  }

  /** Which source (and manifest) a current pod comes from. */
  origin(uid: string): { source: string; manifest: ManifestSource } | undefined {
    for (const s of this.sources.values()) {
      const e = s.current.get(uid);
      if (e !== undefined) return { source: s.name, manifest: e.manifest };
    }
    return undefined;
  }

  // ------------------------------------------------------------ internals

  private addState(name: string, runner: PodSource | undefined): void {
    if (name === '' || name.includes('|')) throw new Error(`pod source name ${JSON.stringify(name)}: must be non-empty, without "|"`);
    if (this.sources.has(name)) throw new Error(`pod source ${name}: already registered`);
    this.sources.set(name, {
      name,
      runner,
      desired: undefined,
      objects: { configMaps: [], secrets: [] },
      sourceErrors: [],
      conflicts: [],
      current: new Map(),
    });
  }

  private sink(name: string): SourceSink {
    return {
      snapshot: (snapshot) => this.merge(name, snapshot),
      failed: (errors) => this.fail(name, errors),
    };
  }

  private async runSource(name: string, source: PodSource, signal: AbortSignal): Promise<void> {
    // Reads that finish after stop() are dropped: nobody consumes them.
    const sink: SourceSink = {
      snapshot: (snapshot) => {
        if (!signal.aborted) this.merge(name, snapshot);
      },
      failed: (errors) => {
        if (!signal.aborted) this.fail(name, errors);
      },
    };
    try {
      await source.run(sink, signal);
    } catch (err) {
      // Sources report bad input through the sink; a throw is a bug. Keep the
      // pods (a dead source is an unreadable one) and make it visible.
      if (signal.aborted) return;
      log.error(`pod source ${name} stopped: ${errorMessage(err)}`);
      this.fail(name, [new ManifestError({ file: name, message: `pod source stopped: ${errorMessage(err)}` })]);
    }
  }

  private fail(name: string, errors: ManifestError[]): void {
    const state = this.sources.get(name);
    if (state === undefined) return;
    state.lastReadAt = Date.now();
    state.sourceErrors = [...errors];
    state.merged = undefined;
    this.logErrors();
  }

  /** podStorage.Merge with SET semantics, for every source a snapshot may affect. */
  private merge(name: string, snapshot: SourceSnapshot): void {
    const state = this.sources.get(name);
    if (state === undefined) return;
    const first = state.desired === undefined;
    state.lastReadAt = Date.now();
    // The same snapshot as last time: the plan and every source's pods are
    // what that merge left (with 110 pods, merging it again compared and
    // copied every pod, ~10 MB of garbage every 20 s).
    if (state.merged === snapshot) return;
    state.merged = snapshot;
    const refused: ManifestError[] = [];
    state.desired = snapshot.pods.filter((p) => {
      if (!this.rejectStaticApiReferences || name === API_SOURCE) return true;
      const resource = apiObjectReference(p.pod);
      if (resource !== undefined) refused.push(new ManifestError({ file: p.source.path, line: p.source.line, message: `static pods may not reference ${resource}` }));
      return resource === undefined;
    });
    const objectsBefore = canonicalJson(state.objects);
    state.objects = { configMaps: [...snapshot.objects.configMaps], secrets: [...snapshot.objects.secrets] };
    if (canonicalJson(state.objects) !== objectsBefore) for (const l of this.objectListeners) l(name);
    state.sourceErrors = [...snapshot.errors, ...refused];

    const plan = this.plan();
    if (first) {
      for (const key of [...this.seeds.keys()]) if (key.startsWith(`${name}|`)) this.seeds.delete(key);
    }
    // The snapshot's own source first: a name it gives up is removed before
    // another source's pod of that name is added.
    const order = [state, ...[...this.sources.values()].filter((s) => s !== state)];
    for (const s of order) {
      const sent = this.apply(s, plan.get(s.name) ?? new Map<string, Planned>());
      // The kubelet sends an empty ADD for a source's first snapshot when
      // nothing else was sent, so the consumer learns the source is ready.
      if (s === state && first && !sent) this.updates.push({ op: 'ADD', source: name, pods: [] });
    }
    this.logErrors();
  }

  /**
   * The pods every seen source should have now, by UID: names resolved
   * between sources, identities kept, conflicts recorded.
   */
  private plan(): Map<string, Map<string, Planned>> {
    const wanted = new Map<string, Map<string, LoadedPod>>();
    for (const s of this.sources.values()) {
      s.conflicts = [];
      if (s.desired === undefined) continue;
      const mine = new Map<string, LoadedPod>();
      for (const lp of s.desired) {
        const key = objectKey(lp.pod);
        // Sources de-duplicate already; a source fed through register() may not.
        if (mine.has(key)) s.conflicts.push(this.conflict(lp, 'metadata.name', `pod ${key} appears twice in the ${s.name} source`));
        else mine.set(key, lp);
      }
      wanted.set(s.name, mine);
    }

    // Names: a source keeps what it runs; free names go in registration order.
    const owner = new Map<string, string>();
    for (const s of this.sources.values()) {
      for (const e of s.current.values()) if (wanted.get(s.name)?.has(e.key)) owner.set(e.key, s.name);
    }
    for (const s of this.sources.values()) {
      const mine = wanted.get(s.name);
      if (mine === undefined) continue;
      for (const [key, lp] of mine) {
        const o = owner.get(key);
        if (o === undefined) owner.set(key, s.name);
        else if (o !== s.name) {
          mine.delete(key);
          s.conflicts.push(this.conflict(lp, 'metadata.name', `Duplicate value: ${JSON.stringify(lp.pod.metadata?.name ?? '')}: pod ${key} is already defined by the ${o} source`));
        }
      }
    }

    // UIDs: pods that keep a running pod's identity first, so that a new
    // pod can never take a UID from a running one.
    const plan = new Map<string, Map<string, Planned>>();
    const uidOwner = new Map<string, string>();
    for (const s of this.sources.values()) {
      const mine = wanted.get(s.name);
      if (mine === undefined) continue;
      const byKey = new Map<string, Entry>([...s.current.values()].map((e) => [e.key, e]));
      const entries = [...mine].sort(([a], [b]) => Number(byKey.has(b)) - Number(byKey.has(a)));
      const byName = new Map<string, [string, Planned]>();
      for (const [key, lp] of entries) {
        const uid = this.uidFor(s.name, lp.pod, byKey.get(key));
        const holder = uidOwner.get(uid);
        if (holder !== undefined) {
          s.conflicts.push(this.conflict(lp, 'metadata.uid', `Duplicate value: ${JSON.stringify(uid)}: already the UID of pod ${holder}`));
          continue;
        }
        uidOwner.set(uid, key);
        // A source that hands the same object for a pod that did not change (the API source: one
        // per watched version) costs no copy and no compare: with 110 API pods, every watch event
        // re-merged all of them (13 % of klet's CPU over a 110-pod start, bench/cluster-cpu.md).
        const cur = byKey.get(key);
        const unchanged = cur !== undefined && cur.loaded === lp && cur.pod.metadata?.uid === uid;
        const borrowed = !unchanged && uid === lp.pod.metadata?.uid;
        const pod = unchanged ? cur.pod : borrowed ? lp.pod : withUID(lp.pod, uid);
        byName.set(key, [uid, { pod, key, manifest: lp.source, loaded: lp, unchanged, borrowed }]);
      }
      // In the snapshot's order, which the updates keep.
      const planned = new Map<string, Planned>();
      for (const key of mine.keys()) {
        const item = byName.get(key);
        if (item !== undefined) planned.set(item[0], item[1]);
      }
      plan.set(s.name, planned);
    }
    return plan;
  }

  private uidFor(source: string, pod: V1Pod, current: Entry | undefined): string {
    const own = pod.metadata?.uid ?? '';
    if (current !== undefined) return this.keepIdentity(current.pod, pod) ? (current.pod.metadata?.uid ?? own) : own;
    return this.seeds.get(identityKey(source, pod.metadata?.namespace ?? 'default', pod.metadata?.name ?? '')) ?? own;
  }

  private conflict(lp: LoadedPod, fieldPath: string, message: string): ManifestError {
    return new ManifestError({ file: lp.source.path, line: lp.source.line, fieldPath, message });
  }

  /** Diff one source's accepted pods against its plan; push the updates. True when something was sent. */
  private apply(s: SourceState, planned: Map<string, Planned>): boolean {
    if (s.desired === undefined) return false;
    const removes: V1Pod[] = [];
    const adds: V1Pod[] = [];
    const updates: V1Pod[] = [];
    const reconciles: V1Pod[] = [];
    for (const [uid, e] of s.current) {
      // Same UID under another name (a manifest that sets metadata.uid, renamed): a different pod.
      if (planned.get(uid)?.key === e.key) continue;
      s.current.delete(uid);
      removes.push(e.pod);
    }
    const own = (p: Planned): V1Pod => (p.borrowed ? cloneModel(p.pod) : p.pod);
    for (const [uid, p] of planned) {
      const e = s.current.get(uid);
      if (e === undefined) {
        const pod = own(p);
        s.current.set(uid, { pod, key: p.key, manifest: p.manifest, loaded: p.loaded });
        adds.push(pod);
        continue;
      }
      e.manifest = p.manifest;
      if (p.unchanged && e.pod === p.pod) continue;
      e.loaded = p.loaded;
      if (differSemantically(e.pod, p.pod)) {
        const pod = own(p);
        // config.seen is when the pod was first seen: keep it (checkAndUpdatePod).
        const seen = e.pod.metadata?.annotations?.[CONFIG_SEEN_ANNOTATION];
        if (seen !== undefined) pod.metadata = { ...pod.metadata, annotations: { ...pod.metadata?.annotations, [CONFIG_SEEN_ANNOTATION]: seen } };
        e.pod = pod;
        e.key = p.key;
        updates.push(e.pod);
      } else if (!jsonEqual(e.pod.status, p.pod.status)) {
        e.pod.status = p.borrowed ? cloneModel(p.pod.status) : p.pod.status;
        reconciles.push(e.pod);
      }
    }
    const send = (op: PodOperation, pods: V1Pod[]): void => {
      if (pods.length > 0) this.updates.push({ op, source: s.name, pods: pods.map((p) => cloneModel(p)) });
    };
    send('REMOVE', removes);
    send('ADD', adds);
    send('UPDATE', updates);
    send('RECONCILE', reconciles);
    return removes.length + adds.length + updates.length + reconciles.length > 0;
  }

  /** Log each new problem once, and when a source's problems are all gone. */
  private logErrors(): void {
    for (const [name, errors] of this.errors()) {
      const before = this.logged.get(name) ?? new Set<string>();
      const now = new Set(errors.map((e) => e.toString()));
      for (const text of now) if (!before.has(text)) log.warn(`pod source ${name}: ${text}`);
      if (before.size > 0 && now.size === 0) log.info(`pod source ${name}: all manifests read cleanly again`);
      this.logged.set(name, now);
    }
  }
}
