/** The sync loop's typed event stream: import from here. */
export {
  DEFAULT_RING_CAPACITY,
  DEFAULT_SUBSCRIBER_QUEUE,
  EventBus,
  type EventBusOptions,
  type SubscribeOptions,
} from './bus.js';
export type {
  BusMessage,
  DroppedMarker,
  KletEvent,
  KletEventBody,
  KletEventKind,
  KletEventMeta,
  PlegKletEvent,
  PodEvent,
  PodEventType,
  PodLifecycleEvent,
  PodLifecycleState,
  PodWaitDoneEvent,
  PodWaitStartedEvent,
  SourceErrorEvent,
  SyncLoopIterationEvent,
  SyncLoopTrigger,
} from './types.js';
