/**
 * Pod configuration for `klet sync` (the kubelet's pkg/kubelet/config):
 * the manifest directory and the manifest URL as pod sources, merged by
 * PodConfig into one stream of pod updates. Importing this module loads
 * @kubernetes/client-node's models (through the manifest layer).
 */
import { PodConfig, type PodConfigOptions } from './config.js';
import { FileSource } from './file.js';
import { HttpSource } from './http.js';

export { PodConfig, identityKey, type PodConfigOptions, type PodOperation, type PodUpdate } from './config.js';
export { FileSource, DEFAULT_FILE_CHECK_FREQUENCY_MS, DEFAULT_WATCH_DEBOUNCE_MS, type FileSourceOptions } from './file.js';
export { HttpSource, DEFAULT_HTTP_CHECK_FREQUENCY_MS, DEFAULT_HTTP_TIMEOUT_MS, type HttpSourceOptions } from './http.js';
export {
  keepLastGood,
  mergeUnits,
  objectKey,
  report,
  Wakeup,
  type ManifestUnit,
  type PodSource,
  type SourceRead,
  type SourceSink,
  type SourceSnapshot,
} from './source.js';

/** The kubelet's source names. */
export const FILE_SOURCE = 'file';
export const HTTP_SOURCE = 'http';

export { ApiSource, API_SOURCE, runnableApiPod, type AdmitPods, type ApiRejection, type WatchNodePods } from './api.js';

export interface PodSourcesOptions extends PodConfigOptions {
  nodeName: string;
  /** --manifest-dir (a directory, or one manifest file). */
  manifestDir?: string;
  /** --manifest-url. */
  manifestUrl?: string;
  /** --manifest-url-header, parsed (parseHeaders). */
  manifestUrlHeaders?: Record<string, string>;
  /** --file-check-frequency. Default 20 s. */
  fileCheckFrequencyMs?: number;
  /** --http-check-frequency. Default 20 s. */
  httpCheckFrequencyMs?: number;
}

/**
 * A PodConfig with the file source (when manifestDir is set) registered
 * before the http source (when manifestUrl is set): the file source wins a
 * name both define and neither runs yet. Not started. Throws InputError for
 * a bad URL.
 */
export function createPodConfig(opts: PodSourcesOptions): PodConfig {
  const config = new PodConfig({ keepIdentity: opts.keepIdentity, rejectStaticApiReferences: opts.rejectStaticApiReferences });
  if (opts.manifestDir !== undefined) {
    config.addSource(new FileSource({ name: FILE_SOURCE, path: opts.manifestDir, nodeName: opts.nodeName, fileCheckFrequencyMs: opts.fileCheckFrequencyMs }));
  }
  if (opts.manifestUrl !== undefined) {
    config.addSource(
      new HttpSource({
        name: HTTP_SOURCE,
        url: opts.manifestUrl,
        headers: opts.manifestUrlHeaders,
        nodeName: opts.nodeName,
        httpCheckFrequencyMs: opts.httpCheckFrequencyMs,
      }),
    );
  }
  return config;
}
