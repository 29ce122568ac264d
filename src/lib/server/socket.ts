/**
 * Listening on a unix socket that only root can use, with no moment in
 * which anyone else could connect.
 *
 * bind(2) creates the socket file with mode 0777 & ~umask, and chmod can
 * only follow: a client racing the chmod would get in. Changing the umask
 * around listen() is process-wide (it would also apply to files other code
 * creates meanwhile) and unavailable in worker threads. Instead the socket
 * is bound inside a fresh private directory (mkdtemp: mode 0700, and
 * connect(2) needs search permission on every directory of the path), made
 * 0600 there, and only then hard-linked to its public name. link(2) never
 * replaces an existing file, so a file that appears meanwhile is not
 * clobbered either.
 */
import { connect } from 'node:net';
import { chmod, link, lstat, mkdir, mkdtemp, rename, rm, unlink } from 'node:fs/promises';
import type { Server } from 'node:http';
import path from 'node:path';
import { InputError, KletError, errorMessage } from '../errors.js';

/** sun_path is 108 bytes on Linux, including the terminating NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

/** The mode of the local API socket: the owner (root) only. */
export const SOCKET_MODE = 0o600;

/** mkdtemp's prefix; the temporary socket path is `<dir>/.klet-XXXXXX/s`. */
const TMP_PREFIX = '.klet-';

function errnoCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** Does something accept connections on the socket? */
function socketIsLive(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const conn = connect(socketPath);
    conn.once('connect', () => {
      conn.destroy();
      resolve(true);
    });
    // ECONNREFUSED: a leftover of a process that is gone. Anything else: not usable either.
    conn.once('error', () => resolve(false));
  });
}

/**
 * Makes room for the socket: removes a stale socket left by a klet that
 * died, refuses to touch a socket someone is serving on, and never removes
 * anything that is not a socket.
 */
async function clearStaleSocket(socketPath: string): Promise<void> {
  let st;
  try {
    st = await lstat(socketPath);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return;
    throw new KletError(`local API socket ${socketPath}: ${errorMessage(err)}`, { cause: err });
  }
  if (!st.isSocket()) {
    throw new InputError(`local API socket ${socketPath}: the path exists and is not a socket; not replacing it`, {
      suggestions: ['remove it, or choose another root dir'],
      input: 'rootDir',
    });
  }
  if (await socketIsLive(socketPath)) {
    throw new KletError(`local API socket ${socketPath} is in use: is another klet sync running?`);
  }
  try {
    await unlink(socketPath);
  } catch (err) {
    if (errnoCode(err) !== 'ENOENT') {
      throw new KletError(`cannot remove the stale socket ${socketPath}: ${errorMessage(err)}`, { cause: err });
    }
  }
}

function listen(server: Server, socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    server.once('error', onError);
    server.listen(socketPath, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

/**
 * Binds `server` to `socketPath` with mode 0600. Returns the function that
 * removes the socket file after the server closed, if the file is still the
 * one this call created.
 */
export async function listenUnixSocket(server: Server, socketPath: string): Promise<() => Promise<void>> {
  const target = path.resolve(socketPath);
  const dir = path.dirname(target);
  const tmpLength = Buffer.byteLength(path.join(dir, `${TMP_PREFIX}XXXXXX`, 's'));
  if (Buffer.byteLength(target) > MAX_SOCKET_PATH_BYTES || tmpLength > MAX_SOCKET_PATH_BYTES) {
    throw new InputError(
      `local API socket ${target}: the path is too long for a unix socket (at most ${MAX_SOCKET_PATH_BYTES} bytes, ` +
        `and klet needs ${tmpLength - Buffer.byteLength(dir)} more in that directory while creating it)`,
      { suggestions: ['use a shorter root dir'], input: 'rootDir' },
    );
  }
  await mkdir(dir, { recursive: true });
  await clearStaleSocket(target);

  const tmpDir = await mkdtemp(path.join(dir, TMP_PREFIX));
  const tmpSocket = path.join(tmpDir, 's');
  try {
    try {
      await listen(server, tmpSocket);
    } catch (err) {
      throw new KletError(`cannot listen on ${target}: ${errorMessage(err)}`, { cause: err });
    }
    await chmod(tmpSocket, SOCKET_MODE);
    try {
      await link(tmpSocket, target);
    } catch (err) {
      const code = errnoCode(err);
      if (code === 'EEXIST') throw new KletError(`local API socket ${target} appeared while klet was creating it`);
      // Some filesystems have no hard links. rename is atomic too; unlike link
      // it would replace a file created since clearStaleSocket, a narrow race.
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
      await rename(tmpSocket, target);
    }
  } catch (err) {
    await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
    throw err;
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }

  const { ino, dev } = await lstat(target);
  return async () => {
    try {
      const st = await lstat(target);
      if (st.ino === ino && st.dev === dev) await unlink(target);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
  };
}
