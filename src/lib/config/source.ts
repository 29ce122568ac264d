/**
 * What every pod source has in common (the kubelet's pkg/kubelet/config
 * common.go, and the SET contract of its sources): a source delivers full
 * snapshots of the pods it wants, never deltas, and says so when it could
 * not read its manifests at all, so that PodConfig can tell "no pods" from
 * "don't know".
 */
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { LocalObjects } from '../kuberuntime/env.js';
import { type LoadedPod, type ManifestSet, ManifestError, type ManifestSource } from '../pod/manifest.js';
import { podKey } from '../pod/key.js';

/** Everything one source wants on the node right now. */
export interface SourceSnapshot {
  /** All pods of the source, each with the manifest it came from. */
  pods: LoadedPod[];
  /** The ConfigMaps and Secrets the source provides to its own pods. */
  objects: LocalObjects;
  /**
   * Problems with individual manifests. They do not make the snapshot
   * partial: the source has already decided which pods stay (see
   * keepLastGood), so PodConfig applies the snapshot as it is.
   */
  errors: ManifestError[];
}

/**
 * Where a source reports. Exactly one of the two per read: a snapshot when
 * the source could be read (even with bad manifests in it), `failed` when
 * it could not (directory gone, URL down, garbage served). A failed read
 * changes nothing but the source's errors: pods keep running on the last
 * snapshot, because an unreadable source says nothing about what is wanted.
 */
export interface SourceSink {
  snapshot(snapshot: SourceSnapshot): void;
  failed(errors: ManifestError[]): void;
}

/** The outcome of one read of a source: what goes to SourceSink.snapshot or SourceSink.failed. */
export type SourceRead = { snapshot: SourceSnapshot } | { failed: ManifestError[] };

/** Report one read. */
export function report(sink: SourceSink, read: SourceRead): void {
  if ('snapshot' in read) sink.snapshot(read.snapshot);
  else sink.failed(read.failed);
}

/** A pod source PodConfig runs: reads until `signal` aborts, reporting every read to `sink`. */
export interface PodSource {
  /** The source name in PodUpdates, errors and identities: `file`, `http`. Unique in a PodConfig. */
  readonly name: string;
  /** Resolves once `signal` has aborted and everything the source holds (watchers, timers) is released. */
  run(sink: SourceSink, signal: AbortSignal): Promise<void>;
}

/** The objects one manifest unit (a file, a URL body) currently contributes. */
export interface ManifestUnit {
  /** The file as named, or the URL: where duplicates are reported. */
  file: string;
  pods: LoadedPod[];
  configMaps: V1ConfigMap[];
  secrets: V1Secret[];
}

/** `namespace/name` of a pod or object, the key of every de-duplication. */
export function objectKey(obj: { metadata?: { namespace?: string; name?: string } }): string {
  return podKey(obj);
}

/**
 * What a unit contributes after a read. A unit that read cleanly is what it
 * says. A unit with errors contributes its valid objects plus those of its
 * last good version that the new read lacks: an object missing from a
 * broken file is more likely the broken part (a half-saved edit, a YAML
 * slip) than a deliberate removal, and stopping an etcd or an API server
 * because of a typo is the worst possible outcome. Removals take effect
 * once the unit reads cleanly again.
 */
export function keepLastGood(file: string, fresh: ManifestSet, last: ManifestUnit | undefined): ManifestUnit {
  const unit: ManifestUnit = { file, pods: [...fresh.pods], configMaps: [...fresh.configMaps], secrets: [...fresh.secrets] };
  if (fresh.errors.length === 0 || last === undefined) return unit;
  const add = <T>(into: T[], from: readonly T[], key: (t: T) => string): void => {
    const have = new Set(into.map(key));
    for (const item of from) if (!have.has(key(item))) into.push(item);
  };
  add(unit.pods, last.pods, (p) => objectKey(p.pod));
  add(unit.configMaps, last.configMaps, objectKey);
  add(unit.secrets, last.secrets, objectKey);
  return unit;
}

function where(source: ManifestSource | undefined, file: string): string {
  if (source === undefined) return file;
  return source.line === undefined ? source.path : `${source.path}:${source.line}`;
}

/**
 * Merge units (in priority order, i.e. file name order) into one snapshot.
 * The same pod, ConfigMap or Secret in two units is an error on the later
 * one, and only the first is kept: prepareManifests' rule for one read of a
 * directory, applied across units that were prepared one by one.
 */
export function mergeUnits(units: Iterable<ManifestUnit>): { pods: LoadedPod[]; objects: LocalObjects; errors: ManifestError[] } {
  const pods: LoadedPod[] = [];
  const configMaps: V1ConfigMap[] = [];
  const secrets: V1Secret[] = [];
  const errors: ManifestError[] = [];
  const seen = new Map<string, string>();
  const claim = (kind: string, key: string, unit: ManifestUnit, at: string, line?: number): boolean => {
    const previous = seen.get(`${kind}/${key}`);
    if (previous === undefined) {
      seen.set(`${kind}/${key}`, at);
      return true;
    }
    const name = key.slice(key.indexOf('/') + 1);
    errors.push(
      new ManifestError({
        file: unit.file,
        line,
        fieldPath: 'metadata.name',
        message: `Duplicate value: ${JSON.stringify(name)}: ${kind} ${key} is already defined at ${previous}`,
      }),
    );
    return false;
  };
  for (const unit of units) {
    for (const p of unit.pods) {
      if (claim('Pod', objectKey(p.pod), unit, where(p.source, unit.file), p.source.line)) pods.push(p);
    }
    for (const c of unit.configMaps) if (claim('ConfigMap', objectKey(c), unit, unit.file)) configMaps.push(c);
    for (const s of unit.secrets) if (claim('Secret', objectKey(s), unit, unit.file)) secrets.push(s);
  }
  return { pods, objects: { configMaps, secrets }, errors };
}

/**
 * A level-triggered wake-up: fire() while nobody waits is remembered, so
 * an fs event that arrives during a read causes one more read, never a
 * lost one; any number of fires before the next wait count as one.
 */
export class Wakeup {
  private pending = false;
  private wake: (() => void) | null = null;

  fire(): void {
    if (this.wake !== null) this.wake();
    else this.pending = true;
  }

  /** Resolves on fire(), after `ms`, or on abort, whichever is first. Never rejects. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.pending || signal.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}
