/**
 * Node's file system errors in the kubelet's words. Node says
 * `ENOENT: no such file or directory, open '/etc/kubernetes/scheduler.conf'`
 * and, for a write to an open file, `ENOSPC: no space left on device, write`
 * with no path at all; the kubelet, a Go program, says
 * `open /etc/kubernetes/scheduler.conf: no such file or directory` and
 * `write /var/lib/kubelet/pods/…/key: no space left on device` (an
 * *os.PathError: the operation, the path, Go's text of the errno; an
 * *os.LinkError, for rename, symlink and link, names both paths). Pure.
 */

/** Go's text of each errno (syscall.Errno.Error() on Linux), by the code Node gives it. */
const GO_ERRNO_TEXT: Readonly<Record<string, string>> = {
  EPERM: 'operation not permitted',
  ENOENT: 'no such file or directory',
  ESRCH: 'no such process',
  EINTR: 'interrupted system call',
  EIO: 'input/output error',
  ENXIO: 'no such device or address',
  E2BIG: 'argument list too long',
  ENOEXEC: 'exec format error',
  EBADF: 'bad file descriptor',
  EAGAIN: 'resource temporarily unavailable',
  ENOMEM: 'cannot allocate memory',
  EACCES: 'permission denied',
  EFAULT: 'bad address',
  EBUSY: 'device or resource busy',
  EEXIST: 'file exists',
  EXDEV: 'invalid cross-device link',
  ENODEV: 'no such device',
  ENOTDIR: 'not a directory',
  EISDIR: 'is a directory',
  EINVAL: 'invalid argument',
  ENFILE: 'too many open files in system',
  EMFILE: 'too many open files',
  ETXTBSY: 'text file busy',
  EFBIG: 'file too large',
  ENOSPC: 'no space left on device',
  ESPIPE: 'illegal seek',
  EROFS: 'read-only file system',
  EMLINK: 'too many links',
  EPIPE: 'broken pipe',
  ENAMETOOLONG: 'file name too long',
  ENOSYS: 'function not implemented',
  ENOTEMPTY: 'directory not empty',
  ELOOP: 'too many levels of symbolic links',
  ENOTSUP: 'operation not supported',
  EOPNOTSUPP: 'operation not supported',
  ETIMEDOUT: 'connection timed out',
  ECONNREFUSED: 'connection refused',
  ESTALE: 'stale NFS file handle',
  EDQUOT: 'disk quota exceeded',
};

/**
 * The operation of Go's os function that makes the same system call, by
 * Node's syscall name, where the two differ (os.Remove for rmdir and unlink,
 * os.ReadDir opening the directory, *os.File methods for the f-calls).
 */
const GO_OP: Readonly<Record<string, string>> = {
  rmdir: 'remove',
  unlink: 'remove',
  scandir: 'open',
  opendir: 'open',
  utime: 'chtimes',
  lutime: 'chtimes',
  fchmod: 'chmod',
  fchown: 'chown',
  fstat: 'stat',
  fsync: 'sync',
  fdatasync: 'sync',
  ftruncate: 'truncate',
  futime: 'chtimes',
};

/** The calls whose Go error (an *os.LinkError) names the source and the destination. */
const LINK_OPS = new Set(['rename', 'symlink', 'link']);

/** Go's text of an errno by its code ('ENOENT' → 'no such file or directory'); undefined when the table has no such code. */
export function goErrnoText(code: string): string | undefined {
  return Object.hasOwn(GO_ERRNO_TEXT, code) ? GO_ERRNO_TEXT[code] : undefined;
}

interface NodeSystemError {
  code?: unknown;
  syscall?: unknown;
  path?: unknown;
  dest?: unknown;
  message?: unknown;
}

/** Node's own description of the errno, from its message ("ENOENT: no such file or directory, open '/x'" → "no such file or directory"). */
function nodeDescription(code: string, message: string, syscall: string | undefined): string {
  let text = message.startsWith(`${code}: `) ? message.slice(code.length + 2) : message;
  if (syscall !== undefined) {
    const at = text.lastIndexOf(`, ${syscall}`);
    if (at >= 0) text = text.slice(0, at);
  }
  return text;
}

/**
 * A Node file system error in Go's form: "op PATH: message" (an
 * *os.PathError), "op OLD NEW: message" for rename, symlink and link (an
 * *os.LinkError). `path` names the file of an error that names none (a
 * write to a file opened before). Not a Node system error: its message.
 */
export function goFsError(err: unknown, path?: string): string {
  if (!(err instanceof Error)) return String(err);
  const e = err as NodeSystemError;
  if (typeof e.code !== 'string' || !/^E[A-Z0-9]+$/.test(e.code)) return err.message;
  const syscall = typeof e.syscall === 'string' ? e.syscall : undefined;
  const text = goErrnoText(e.code) ?? nodeDescription(e.code, err.message, syscall);
  const file = typeof e.path === 'string' ? e.path : path;
  if (syscall === undefined) return file === undefined ? text : `${file}: ${text}`;
  const op = GO_OP[syscall] ?? syscall;
  if (LINK_OPS.has(syscall) && typeof e.dest === 'string' && file !== undefined) return `${op} ${file} ${e.dest}: ${text}`;
  return file === undefined ? `${op}: ${text}` : `${op} ${file}: ${text}`;
}
