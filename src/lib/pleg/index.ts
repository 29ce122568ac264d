/**
 * The pod lifecycle event generator: the relisting GenericPLEG (the complete
 * path) and detection of the CRI event stream. See generic.ts.
 */
export {
  DEFAULT_CHANNEL_CAPACITY,
  DEFAULT_RELIST_PERIOD_MS,
  DEFAULT_RELIST_THRESHOLD_MS,
  GenericPLEG,
  type GenericPLEGOptions,
  type PlegRuntime,
} from './generic.js';
export { DEFAULT_EVENTED_PROBE_MS, detectEventedSupport } from './evented.js';
export { buildPodRecords, containerPlegState, diffPodRecords, generateEvents, keepUnchanged, sameRecord, sandboxPlegState } from './diff.js';
export type {
  ContainerSnapshot,
  ContainerSnapshotState,
  LastRelist,
  PlegContainerState,
  PlegEvent,
  PlegEventType,
  PlegHealth,
  PodRecordSnapshot,
  SandboxSnapshot,
} from './types.js';
