/** The local API of `klet sync` and its client: import from here. */
export {
  NDJSON_CONTENT_TYPE,
  startLocalApi,
  type Health,
  type HealthCheck,
  type LocalApi,
  type LocalApiHandlers,
  type LocalApiOptions,
} from './local-api.js';
export { isNodeStatus, type NodeStatus, type RuntimeCondition } from './node-status.js';
export {
  LISTEN_INPUT,
  assertValidToken,
  bearerTokenMatches,
  isLoopbackHost,
  parseListen,
  readAuthTokenFile,
  type ListenAddress,
} from './auth.js';
export { MAX_SOCKET_PATH_BYTES, SOCKET_MODE } from './socket.js';
export {
  LOCAL_API_SOCKET_NAME,
  LocalApiUnavailableError,
  describeTarget,
  localApiEvents,
  localApiRequest,
  localApiSocketPath,
  type LocalApiEventsOptions,
  type LocalApiRequestOptions,
  type LocalApiResponse,
  type LocalApiTarget,
} from './client.js';
