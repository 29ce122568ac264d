/**
 * CRI call metrics without touching the CRI client: the kubelet wraps its
 * runtime service in instrumentedRuntimeService (latency, count and errors
 * per operation); instrumentCri does the same with a Proxy, so every method
 * of CriClient, including ones added later, is measured, and the wrapped
 * client keeps CriClient's exact type.
 */
import type { KletMetrics } from './metrics.js';

/** What instrumentCri needs from KletMetrics (a fake in tests). */
export type RuntimeOperationRecorder = Pick<KletMetrics, 'observeRuntimeOperation'>;

/** Methods that are not CRI operations. */
const NOT_OPERATIONS = new Set(['close', 'constructor']);

/**
 * The kubelet's operation_type for a CriClient method: snake_case, with
 * "PodSandbox" as one word as the kubelet writes it (runPodSandbox →
 * run_podsandbox, podSandboxStatus → podsandbox_status).
 */
export function operationType(method: string): string {
  return method
    .replace(/([pP])odSandbox/g, '$1odsandbox')
    .replace(/[A-Z]/g, (c) => '_' + c.toLowerCase())
    .replace(/^_/, '');
}

/**
 * True when the caller's own AbortSignal (in a CallOptions argument) has
 * fired: that cancellation was asked for (shutdown, a consumer that went
 * away) and says nothing about the runtime, so it is neither timed nor
 * counted as an error.
 */
function cancelledByCaller(args: readonly unknown[]): boolean {
  return args.some((arg) => {
    if (typeof arg !== 'object' || arg === null || !('signal' in arg)) return false;
    const { signal } = arg;
    return signal instanceof AbortSignal && signal.aborted;
  });
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && 'then' in value && typeof value.then === 'function';
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

/**
 * A server stream (getContainerEvents) is timed from the call to its end, as
 * the kubelet times GetContainerEvents, but only when the runtime ended it
 * (or it failed): a consumer that stops reading (`break`, its signal) ended
 * it by choice, and that says nothing about the runtime.
 */
async function* instrumentedStream(
  stream: AsyncIterable<unknown>,
  record: (durationMs: number, failed: boolean) => void,
  args: readonly unknown[],
): AsyncGenerator<unknown, void, undefined> {
  const start = performance.now();
  try {
    yield* stream;
  } catch (err) {
    if (!cancelledByCaller(args)) record(performance.now() - start, true);
    throw err;
  }
  // Not reached when the consumer returns early: that completes the generator at the yield.
  record(performance.now() - start, false);
}

/**
 * Returns `client` wrapped so that each method call records
 * kubelet_runtime_operations_total, _duration_seconds and, when it rejects
 * or throws, _errors_total under the method's operation_type. Calls are
 * made on the original object (private fields keep working); non-method
 * properties pass through. Stop/Remove of something already gone succeed in
 * CriClient, so they count as successes here too.
 */
export function instrumentCri<C extends object>(client: C, metrics: RuntimeOperationRecorder): C {
  const wrappers = new Map<string, { original: unknown; wrapper: (...args: unknown[]) => unknown }>();

  const wrap = (method: string, original: (...args: unknown[]) => unknown): ((...args: unknown[]) => unknown) => {
    const op = operationType(method);
    const record = (durationMs: number, failed: boolean): void =>
      metrics.observeRuntimeOperation(op, durationMs, failed);
    return (...args: unknown[]): unknown => {
      const start = performance.now();
      const settle = (failed: boolean): void => {
        if (!(failed && cancelledByCaller(args))) record(performance.now() - start, failed);
      };
      let result: unknown;
      try {
        result = Reflect.apply(original, client, args);
      } catch (err) {
        settle(true);
        throw err;
      }
      if (isPromiseLike(result)) {
        return Promise.resolve(result).then(
          (value) => {
            settle(false);
            return value;
          },
          (err: unknown) => {
            settle(true);
            throw err;
          },
        );
      }
      if (isAsyncIterable(result)) return instrumentedStream(result, record, args);
      settle(false);
      return result;
    };
  };

  return new Proxy(client, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      if (NOT_OPERATIONS.has(prop) || prop in Object.prototype) return value;
      const cached = wrappers.get(prop);
      if (cached?.original === value) return cached.wrapper;
      const wrapper = wrap(prop, value as (...args: unknown[]) => unknown);
      wrappers.set(prop, { original: value, wrapper });
      return wrapper;
    },
  });
}
