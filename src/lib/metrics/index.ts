/** klet's Prometheus metrics: import from here. */
export {
  CONTAINER_STATES,
  DEFAULT_BUCKETS,
  errorCodeLabel,
  grpcCodeLabel,
  KletMetrics,
  POD_START_BUCKETS,
  RUNTIME_OPERATION_BUCKETS,
  type ContainerStateLabel,
  type ContainerTypeLabel,
  type KletMetricsOptions,
  type PodWorkerOperation,
} from './metrics.js';
export { instrumentCri, operationType, type RuntimeOperationRecorder } from './instrument-cri.js';
