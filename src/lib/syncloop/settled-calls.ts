/**
 * The runtime calls that make something — a sandbox (RunPodSandbox), a
 * container (CreateContainer), a running container (StartContainer) — are
 * not cut off by the sync's stop once sent: the stop waits for them.
 *
 * The runtime carries on with a call its client gave up on: containerd 1.6
 * goes on creating the sandbox (or rolls it back), its runc making the pod
 * cgroup again as the sandbox's cgroup_parent, or goes on starting the
 * container. A `klet sync` that cancelled such a call on SIGTERM would exit
 * while the runtime still made an object nobody knows of: the `klet delete`
 * that follows lists no such sandbox, removes the pod's cgroup, and then the
 * runtime makes the sandbox and the cgroup (issue 60); or it finds the
 * container "in starting state, can't be removed". Waited for, the call ends
 * with the object made (the next step of the sync, cancelled, stops there),
 * and what the sync leaves is all in the runtime's lists.
 *
 * A call not yet sent when the signal aborts is refused as before; each call
 * keeps the client's own deadline (the runtime request timeout), and the stop
 * waits for them only so long (drain's `maxMs`).
 */

const SETTLED_METHODS = new Set(['runPodSandbox', 'createContainer', 'startContainer']);

export interface SettledCalls<C> {
  /** The client whose making calls, once sent, ignore their signal. */
  client: C;
  /**
   * Resolves when no such call is in flight, or after `maxMs` (a runtime that
   * does not answer): then the calls still in flight, by method.
   */
  drain(maxMs: number): Promise<string[]>;
}

interface CallOptionsLike {
  signal?: AbortSignal;
}

export function settleMakingCalls<C extends object>(client: C): SettledCalls<C> {
  const inFlight = new Map<Promise<unknown>, string>();
  // By method, with the function it wraps (a method replaced on the client, as a test's fake may, is wrapped again).
  const wrappers = new Map<string, { original: unknown; wrapper: (...args: unknown[]) => unknown }>();
  const proxy = new Proxy(client, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      const cached = wrappers.get(prop);
      if (cached !== undefined && cached.original === value) return cached.wrapper;
      let w: (...args: unknown[]) => unknown;
      const original = value as (...args: unknown[]) => unknown;
      if (!SETTLED_METHODS.has(prop)) {
        w = original.bind(target);
      } else {
        w = (...args: unknown[]): unknown => {
          const opts = args[1] as CallOptionsLike | undefined;
          // Cancelled before it is sent: refused, as the client refuses it.
          if (opts?.signal?.aborted === true) return Reflect.apply(original, target, args);
          const { signal: _dropped, ...rest } = opts ?? {};
          const p = Promise.resolve(Reflect.apply(original, target, [args[0], rest, ...args.slice(2)]));
          inFlight.set(p, prop);
          const done = (): void => {
            inFlight.delete(p);
          };
          p.then(done, done);
          return p;
        };
      }
      wrappers.set(prop, { original, wrapper: w });
      return w;
    },
  });
  return {
    client: proxy,
    drain: async (maxMs) => {
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<void>((r) => (timer = setTimeout(r, maxMs)));
      let late = false;
      void expired.then(() => (late = true));
      try {
        while (inFlight.size > 0 && !late) await Promise.race([Promise.allSettled([...inFlight.keys()]), expired]);
      } finally {
        clearTimeout(timer);
      }
      return [...inFlight.values()];
    },
  };
}
