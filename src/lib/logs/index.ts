/** Container logs in the CRI format: parsing, locating and reading them. */
export {
  type CriLogEntry,
  type CriLogRecord,
  type CriStream,
  type ParsedTime,
  formatCriTimestamp,
  parseCriLogBytes,
  parseCriLogLine,
  parseRfc3339Nano,
} from './cri-format.js';
export { type ReadContainerLogOptions, readContainerLog } from './reader.js';
export {
  DEFAULT_POD_LOGS_ROOT,
  containerLogDir,
  containerLogFile,
  latestLogFile,
  podLogDir,
  podLogDirOf,
  containerLogPath,
} from './paths.js';
