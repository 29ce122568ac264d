/**
 * A typed client for the CRI v1 RuntimeService and ImageService over a unix
 * socket (gRPC on Node's http2: transport.ts), behaving like the kubelet's
 * remote runtime client:
 *
 * - every unary call has a deadline (default 2m, the kubelet's
 *   --runtime-request-timeout) and can be cancelled with an AbortSignal;
 * - failures are CriError subclasses (see errors.ts);
 * - Stop/Remove of a sandbox, container or image that does not exist
 *   succeeds, as the CRI requires of those calls (some runtimes still answer
 *   NotFound, so the client enforces it);
 * - requests are DeepPartial inputs completed by the generated fromPartial,
 *   so callers write only the fields they mean.
 */
import { CRI_NAMESPACE, SUBSCRIBE_PATH, decodeTaskExit, encodeSubscribeRequest, type TaskExit } from './containerd-events.js';
import {
  ContainerStatsRequest,
  ContainerStatusRequest,
  CreateContainerRequest,
  AttachRequest,
  ExecRequest,
  ExecSyncRequest,
  PortForwardRequest,
  GetEventsRequest,
  ImageFsInfoRequest,
  ImageServiceDefinition,
  ImageStatusRequest,
  ListContainerStatsRequest,
  ListContainersRequest,
  ListImagesRequest,
  ListPodSandboxRequest,
  PodSandboxStatusRequest,
  PullImageRequest,
  RemoveContainerRequest,
  RemoveImageRequest,
  RemovePodSandboxRequest,
  ReopenContainerLogRequest,
  RunPodSandboxRequest,
  RuntimeServiceDefinition,
  StartContainerRequest,
  StatusRequest,
  StopContainerRequest,
  StopPodSandboxRequest,
  VersionRequest,
  ContainerEventResponse,
  Container,
  PodSandbox,
  type ContainerStatsResponse,
  type ContainerStatusResponse,
  type ReopenContainerLogResponse,
  type CreateContainerResponse,
  type DeepPartial,
  type AttachResponse,
  type ExecResponse,
  type ExecSyncResponse,
  type PortForwardResponse,
  type ImageFsInfoResponse,
  type ImageStatusResponse,
  type ListContainerStatsResponse,
  type ListContainersResponse,
  type ListImagesResponse,
  type ListPodSandboxResponse,
  type MessageFns,
  type PodSandboxStatusResponse,
  type PullImageResponse,
  RemoveContainerResponse,
  RemoveImageResponse,
  RemovePodSandboxResponse,
  type RunPodSandboxResponse,
  type StartContainerResponse,
  type UpdateContainerResourcesRequest,
  type UpdateContainerResourcesResponse,
  type StatusResponse,
  StopContainerResponse,
  StopPodSandboxResponse,
  type VersionResponse,
} from './gen/api.js';
import { parseEndpoint } from './endpoint.js';
import { CriNotFoundError, toCriError } from './errors.js';
import { MessageMemo, decodeMemoList } from './memo.js';
import { InterningReader, StringTable } from './strings.js';
import { GrpcChannel } from './transport.js';

/** The kubelet's --runtime-request-timeout default. */
export const DEFAULT_TIMEOUT_MS = 2 * 60 * 1000;
/**
 * PullImage default deadline. The kubelet gives pulls no deadline at all
 * (large images on slow links take long); we keep one so a hung runtime still
 * surfaces, but a generous one.
 */
export const DEFAULT_PULL_TIMEOUT_MS = 30 * 60 * 1000;
/** The kubelet's maximum CRI message size (ListContainers on a busy node is large). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface CriClientOptions {
  /** Deadline of each call unless the call overrides it. Default 2 minutes. */
  timeoutMs?: number;
  /** Deadline of PullImage unless the call overrides it. Default 30 minutes. */
  pullTimeoutMs?: number;
}

export interface CallOptions {
  /** Cancels the call; it then rejects with CriCancelledError. */
  signal?: AbortSignal;
  /** This call's deadline, instead of the client's. */
  timeoutMs?: number;
}

/** A request as callers write it: any subset of the message's fields. */
export type Input<T> = DeepPartial<T>;

/** One method of a generated service definition (ts-proto generic-definitions). */
interface MethodDef<Req, Res> {
  readonly name: string;
  readonly requestType: MessageFns<Req>;
  readonly responseType: MessageFns<Res>;
}

/** The map fields of CRI PodSandbox (labels, annotations) and Container (labels, annotations): compared as sets by the memo. */
const SANDBOX_MAP_FIELDS = [5, 6];
const CONTAINER_MAP_FIELDS = [8, 9];

const rt = RuntimeServiceDefinition.methods;
const img = ImageServiceDefinition.methods;
const RUNTIME_SERVICE = `/${RuntimeServiceDefinition.fullName}/`;
const IMAGE_SERVICE = `/${ImageServiceDefinition.fullName}/`;

export class CriClient {
  /** The endpoint URI, `unix:///…`. */
  readonly endpoint: string;
  readonly timeoutMs: number;
  readonly pullTimeoutMs: number;
  private readonly channel: GrpcChannel;
  /** Strings of earlier responses, reused by later ones (strings.ts: the relist's IDs and labels repeat every second). */
  private readonly strings = new StringTable();
  /** Sandboxes and containers of earlier lists, reused by later ones (memo.ts: the relist repeats every second). */
  private readonly sandboxMemo = new MessageMemo((b) => PodSandbox.decode(new InterningReader(b, this.strings)), SANDBOX_MAP_FIELDS);
  private readonly containerMemo = new MessageMemo((b) => Container.decode(new InterningReader(b, this.strings)), CONTAINER_MAP_FIELDS);

  private constructor(endpoint: string, opts: CriClientOptions) {
    const { uri, socketPath } = parseEndpoint(endpoint);
    this.endpoint = uri;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.pullTimeoutMs = opts.pullTimeoutMs ?? Math.max(DEFAULT_PULL_TIMEOUT_MS, this.timeoutMs);
    // One connection serves both services: the method paths carry the service name.
    this.channel = new GrpcChannel(socketPath, { maxMessageBytes: MAX_MESSAGE_BYTES });
  }

  /**
   * Creates a client for `endpoint` (unix:///path or an absolute path; throws
   * InputError otherwise). Connecting is lazy: an unreachable runtime shows up
   * as CriUnavailableError on the first call.
   */
  static connect(endpoint: string, opts: CriClientOptions = {}): CriClient {
    return new CriClient(endpoint, opts);
  }

  /** Closes the connection; calls in flight are cancelled (CriCancelledError), and so are later ones. */
  close(): void {
    this.channel.close();
  }

  // ------------------------------------------------------------- runtime

  version(req: Input<VersionRequest> = {}, opts?: CallOptions): Promise<VersionResponse> {
    return this.unary(RUNTIME_SERVICE, rt.version, req, opts);
  }

  /** Runtime conditions (RuntimeReady, NetworkReady); `verbose` adds the runtime's config in `info`. */
  status(req: Input<StatusRequest> = {}, opts?: CallOptions): Promise<StatusResponse> {
    return this.unary(RUNTIME_SERVICE, rt.status, req, opts);
  }

  runPodSandbox(req: Input<RunPodSandboxRequest>, opts?: CallOptions): Promise<RunPodSandboxResponse> {
    return this.unary(RUNTIME_SERVICE, rt.runPodSandbox, req, opts);
  }

  /** Idempotent: a sandbox that does not exist is already stopped. */
  stopPodSandbox(req: Input<StopPodSandboxRequest>, opts?: CallOptions): Promise<StopPodSandboxResponse> {
    return orEmptyIfNotFound(
      this.unary(RUNTIME_SERVICE, rt.stopPodSandbox, req, opts),
      () => StopPodSandboxResponse.create(),
    );
  }

  /** Idempotent: a sandbox that does not exist is already removed. */
  removePodSandbox(req: Input<RemovePodSandboxRequest>, opts?: CallOptions): Promise<RemovePodSandboxResponse> {
    return orEmptyIfNotFound(
      this.unary(RUNTIME_SERVICE, rt.removePodSandbox, req, opts),
      () => RemovePodSandboxResponse.create(),
    );
  }

  podSandboxStatus(req: Input<PodSandboxStatusRequest>, opts?: CallOptions): Promise<PodSandboxStatusResponse> {
    return this.unary(RUNTIME_SERVICE, rt.podSandboxStatus, req, opts);
  }

  /** The answer's sandboxes are shared with other answers and frozen (memo.ts): copy one to change it. */
  listPodSandbox(req: Input<ListPodSandboxRequest> = {}, opts?: CallOptions): Promise<ListPodSandboxResponse> {
    return this.unary(RUNTIME_SERVICE, rt.listPodSandbox, req, opts, (buf) => ({ items: decodeMemoList(buf, this.sandboxMemo) }));
  }

  createContainer(req: Input<CreateContainerRequest>, opts?: CallOptions): Promise<CreateContainerResponse> {
    return this.unary(RUNTIME_SERVICE, rt.createContainer, req, opts);
  }

  startContainer(req: Input<StartContainerRequest>, opts?: CallOptions): Promise<StartContainerResponse> {
    return this.unary(RUNTIME_SERVICE, rt.startContainer, req, opts);
  }

  /** A running container's Linux resources (in-place pod resize). */
  updateContainerResources(req: Input<UpdateContainerResourcesRequest>, opts?: CallOptions): Promise<UpdateContainerResourcesResponse> {
    return this.unary(RUNTIME_SERVICE, rt.updateContainerResources, req, opts);
  }

  /**
   * Idempotent: a container that does not exist is already stopped. The
   * deadline is extended by the grace period (`timeout` seconds), since the
   * runtime waits that long before SIGKILL.
   */
  stopContainer(req: Input<StopContainerRequest>, opts: CallOptions = {}): Promise<StopContainerResponse> {
    const full = StopContainerRequest.fromPartial(req);
    const timeoutMs = (opts.timeoutMs ?? this.timeoutMs) + secondsToMs(full.timeout);
    return orEmptyIfNotFound(
      this.unary(RUNTIME_SERVICE, rt.stopContainer, full, { ...opts, timeoutMs }),
      () => StopContainerResponse.create(),
    );
  }

  /** Idempotent: a container that does not exist is already removed. */
  removeContainer(req: Input<RemoveContainerRequest>, opts?: CallOptions): Promise<RemoveContainerResponse> {
    return orEmptyIfNotFound(
      this.unary(RUNTIME_SERVICE, rt.removeContainer, req, opts),
      () => RemoveContainerResponse.create(),
    );
  }

  /** The answer's containers are shared with other answers and frozen (memo.ts): copy one to change it. */
  listContainers(req: Input<ListContainersRequest> = {}, opts?: CallOptions): Promise<ListContainersResponse> {
    return this.unary(RUNTIME_SERVICE, rt.listContainers, req, opts, (buf) => ({ containers: decodeMemoList(buf, this.containerMemo) }));
  }

  containerStatus(req: Input<ContainerStatusRequest>, opts?: CallOptions): Promise<ContainerStatusResponse> {
    return this.unary(RUNTIME_SERVICE, rt.containerStatus, req, opts);
  }

  /** The runtime reopens the container's log path (after log rotation renamed the file). */
  reopenContainerLog(req: Input<ReopenContainerLogRequest>, opts?: CallOptions): Promise<ReopenContainerLogResponse> {
    return this.unary(RUNTIME_SERVICE, rt.reopenContainerLog, req, opts);
  }

  /**
   * Runs a command in a container and collects its output. A non-zero exit
   * is a normal response (exitCode), not an error. The exec's own `timeout`
   * (seconds) is added to the call deadline, as the kubelet does, so the
   * runtime's timeout fires first and the runtime has time to clean up.
   */
  execSync(req: Input<ExecSyncRequest>, opts: CallOptions = {}): Promise<ExecSyncResponse> {
    const full = ExecSyncRequest.fromPartial(req);
    const timeoutMs = (opts.timeoutMs ?? this.timeoutMs) + secondsToMs(full.timeout);
    return this.unary(RUNTIME_SERVICE, rt.execSync, full, { ...opts, timeoutMs });
  }

  /** A URL on the runtime's streaming server where this exec runs once a client connects (kubectl exec's path). */
  exec(req: Input<ExecRequest>, opts?: CallOptions): Promise<ExecResponse> {
    return this.unary(RUNTIME_SERVICE, rt.exec, req, opts);
  }

  /** A URL on the runtime's streaming server attached to the container's main process. */
  attach(req: Input<AttachRequest>, opts?: CallOptions): Promise<AttachResponse> {
    return this.unary(RUNTIME_SERVICE, rt.attach, req, opts);
  }

  /** A URL on the runtime's streaming server forwarding to ports in the sandbox's network namespace. */
  portForward(req: Input<PortForwardRequest>, opts?: CallOptions): Promise<PortForwardResponse> {
    return this.unary(RUNTIME_SERVICE, rt.portForward, req, opts);
  }

  containerStats(req: Input<ContainerStatsRequest>, opts?: CallOptions): Promise<ContainerStatsResponse> {
    return this.unary(RUNTIME_SERVICE, rt.containerStats, req, opts);
  }

  listContainerStats(
    req: Input<ListContainerStatsRequest> = {},
    opts?: CallOptions,
  ): Promise<ListContainerStatsResponse> {
    return this.unary(RUNTIME_SERVICE, rt.listContainerStats, req, opts);
  }

  /**
   * Container lifecycle events (evented PLEG). The stream has no deadline: it
   * lasts until the consumer stops iterating, `opts.signal` aborts (the
   * iteration then throws CriCancelledError), or the runtime ends it.
   * containerd 1.6 does not implement it: iteration throws CriUnimplementedError.
   */
  async *getContainerEvents(opts: CallOptions = {}): AsyncGenerator<ContainerEventResponse, void, undefined> {
    const def = rt.getContainerEvents;
    const deadlineAt = opts.timeoutMs === undefined ? undefined : Date.now() + opts.timeoutMs;
    const context = { method: def.name, endpoint: this.endpoint, timeoutMs: opts.timeoutMs, deadlineAt };
    const request = GetEventsRequest.encode(GetEventsRequest.fromPartial({})).finish();
    try {
      for await (const msg of this.channel.serverStream(RUNTIME_SERVICE + def.name, request, { deadlineAt, signal: opts.signal })) {
        yield ContainerEventResponse.decode(new InterningReader(msg, this.strings));
      }
    } catch (err) {
      throw toCriError(err, context);
    }
  }

  /**
   * containerd only (not CRI): the exits of containers' init processes in
   * the CRI namespace, from containerd's own event service on the same
   * socket (containerd-events.ts). Another runtime answers Unimplemented
   * (CriUnimplementedError). Ends when `opts.signal` aborts.
   */
  async *containerdTaskExits(opts: CallOptions = {}): AsyncGenerator<TaskExit, void, undefined> {
    const context = { method: 'Events/Subscribe', endpoint: this.endpoint };
    // containerd 1.6 matches no envelope with a namespace filter: that is checked here.
    const request = encodeSubscribeRequest(['topic=="/tasks/exit"']);
    try {
      for await (const msg of this.channel.serverStream(SUBSCRIBE_PATH, request, { signal: opts.signal })) {
        const exit = decodeTaskExit(msg);
        if (exit !== null && exit.namespace === CRI_NAMESPACE) yield exit;
      }
    } catch (err) {
      throw toCriError(err, context);
    }
  }

  // -------------------------------------------------------------- images

  listImages(req: Input<ListImagesRequest> = {}, opts?: CallOptions): Promise<ListImagesResponse> {
    return this.unary(IMAGE_SERVICE, img.listImages, req, opts);
  }

  /** Resolves with `image` unset (not an error) when the image is not present. */
  imageStatus(req: Input<ImageStatusRequest>, opts?: CallOptions): Promise<ImageStatusResponse> {
    return this.unary(IMAGE_SERVICE, img.imageStatus, req, opts);
  }

  /** Deadline: `pullTimeoutMs` (30 minutes by default) unless the call sets one. */
  pullImage(req: Input<PullImageRequest>, opts: CallOptions = {}): Promise<PullImageResponse> {
    const timeoutMs = opts.timeoutMs ?? this.pullTimeoutMs;
    return this.unary(IMAGE_SERVICE, img.pullImage, req, { ...opts, timeoutMs });
  }

  /** Idempotent: an image that is not present is already removed. */
  removeImage(req: Input<RemoveImageRequest>, opts?: CallOptions): Promise<RemoveImageResponse> {
    return orEmptyIfNotFound(
      this.unary(IMAGE_SERVICE, img.removeImage, req, opts),
      () => RemoveImageResponse.create(),
    );
  }

  imageFsInfo(req: Input<ImageFsInfoRequest> = {}, opts?: CallOptions): Promise<ImageFsInfoResponse> {
    return this.unary(IMAGE_SERVICE, img.imageFsInfo, req, opts);
  }

  // ------------------------------------------------------------ plumbing

  /** One unary call: complete and encode the request, set the deadline, wire the signal, map errors. */
  private unary<Req, Res>(
    service: string,
    def: MethodDef<Req, Res>,
    req: Input<Req>,
    opts: CallOptions = {},
    decode: (buf: Uint8Array) => Res = (buf) => def.responseType.decode(new InterningReader(buf, this.strings)),
  ): Promise<Res> {
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const deadlineAt = Date.now() + timeoutMs;
    let request: Uint8Array;
    try {
      request = def.requestType.encode(def.requestType.fromPartial(req)).finish();
    } catch (err) {
      return Promise.reject(toCriError(err, { method: def.name, endpoint: this.endpoint }));
    }
    return this.channel.unary(service + def.name, request, { deadlineAt, signal: opts.signal }).then(
      (buf) => {
        try {
          return decode(buf);
        } catch (err) {
          throw toCriError(err, { method: def.name, endpoint: this.endpoint });
        }
      },
      (err: unknown) => {
        throw toCriError(err, { method: def.name, endpoint: this.endpoint, timeoutMs, deadlineAt });
      },
    );
  }
}

/** CRI int64 seconds → ms, 0 for unset or negative. */
function secondsToMs(seconds: bigint): number {
  return seconds > 0n ? Number(seconds) * 1000 : 0;
}

/** The CRI's idempotence rule for stop/remove: "not found" means "already done". */
async function orEmptyIfNotFound<T>(call: Promise<T>, empty: () => T): Promise<T> {
  try {
    return await call;
  } catch (err) {
    if (err instanceof CriNotFoundError) return empty();
    throw err;
  }
}
