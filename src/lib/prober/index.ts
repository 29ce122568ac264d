export * from './types.js';
export { ProberManager, type ProberManagerOptions, type ProberMetrics, type ProbeMetricLabels, type ProbeMetricResult, type ProbeUpdate, type ProbeRunRecord } from './manager.js';
export { runHandler, probeEvent, probeOf, resolvePort, handlerName, type ProbeTarget } from './prober.js';
export { readProbeResults, writeProbeResults, probedContainerState, type PodProbeResults, type ContainerProbeResults } from './results.js';
