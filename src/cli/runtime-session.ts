/**
 * The container runtime and service dependencies of one command run, without
 * oclif (RuntimeCommand and the oclif-free `runonce` entry both use it). On
 * the kubelet's default endpoint with no socket present, the klet-managed
 * containerd is started first (announced in one line on stderr).
 */
import { DEFAULT_RUNTIME_ENDPOINT } from '../lib/cri/endpoint.js';
import type { CriClient } from '../lib/cri/client.js';
import type { KletEventBody } from '../lib/events/types.js';
import type { ServiceDeps } from '../lib/services/deps.js';
import type { GlobalArgv } from './argv.js';
import { nodeNameOf } from './defaults.js';

export interface RuntimeSessionOptions {
  endpoint: string;
  /** Whether `endpoint` is the default one (only then is the managed runtime started on demand). */
  endpointIsDefault: boolean;
  rootDir: string;
  runtimeTimeoutMs: number;
  nodeName: string;
  /** The run's interrupt signal, taken only when the service deps are built (taking it may install signal handlers). */
  signal(): AbortSignal;
  /** One line for the user on stderr (the managed runtime being started). */
  notice(line: string): void;
}

export class RuntimeSession {
  private client: CriClient | undefined;
  private connecting: Promise<CriClient> | undefined;
  private builtDeps: ServiceDeps | undefined;

  constructor(private readonly opts: RuntimeSessionOptions) {}

  /**
   * A connected CRI client; the runtime is started on demand on the default
   * endpoint. Calls made while it connects share the one connection (the
   * services' first two lists go out together).
   */
  cri(): Promise<CriClient> {
    this.connecting ??= this.connect();
    return this.connecting;
  }

  private async connect(): Promise<CriClient> {
    const { parseEndpoint } = await import('../lib/cri/endpoint.js');
    parseEndpoint(this.opts.endpoint);
    const { ensureRuntime } = await import('../lib/runtime/containerd.js');
    await ensureRuntime(
      { endpoint: this.opts.endpoint, rootDir: this.opts.rootDir },
      { allowStart: this.opts.endpointIsDefault, notify: (line) => this.opts.notice(line) },
    );
    const { CriClient } = await import('../lib/cri/client.js');
    this.client = CriClient.connect(this.opts.endpoint, { timeoutMs: this.opts.runtimeTimeoutMs });
    return this.client;
  }

  /**
   * The dependencies of every service, built once per run: the runtime, root
   * dir, node name, the interrupt signal and a cache for the run. `onEvent`
   * is where the services' events go (progress display).
   */
  async deps(onEvent?: (e: KletEventBody) => void): Promise<ServiceDeps> {
    if (this.builtDeps === undefined) {
      // Connected (and the managed runtime started) on the first CRI call, so
      // that a service refusing its input first never touches the runtime.
      const cri = new Proxy({} as CriClient, {
        get: (_target, method: string) => {
          if (method === 'then') return undefined;
          return async (...args: unknown[]) => {
            const client = (await this.cri()) as unknown as Record<string, (...a: unknown[]) => unknown>;
            return client[method]!(...args);
          };
        },
      });
      const { NodeCache } = await import('../lib/kuberuntime/sync-pod.js');
      this.builtDeps = { cri, rootDir: this.opts.rootDir, nodeName: this.opts.nodeName, signal: this.opts.signal(), cache: new NodeCache() };
    }
    return onEvent === undefined ? this.builtDeps : { ...this.builtDeps, onEvent };
  }

  /** Close the runtime connection, if one was made. */
  close(): void {
    this.client?.close();
  }
}

/** The session of an oclif-free entry (src/cli/*-entry.ts), from its global flags; notices go to stderr. */
export function entrySession(flags: GlobalArgv, signal: () => AbortSignal): RuntimeSession {
  return new RuntimeSession({
    endpoint: flags['container-runtime-endpoint'],
    endpointIsDefault: flags['container-runtime-endpoint'] === DEFAULT_RUNTIME_ENDPOINT,
    rootDir: flags['root-dir'],
    runtimeTimeoutMs: flags['runtime-request-timeout'],
    nodeName: nodeNameOf(flags['node-name']),
    signal,
    notice: (line) => process.stderr.write(line + '\n'),
  });
}
