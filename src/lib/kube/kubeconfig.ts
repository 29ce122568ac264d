/**
 * A kubeconfig read and resolved for the node's API client (lib/kube/rest.ts):
 * the current context's cluster (server, CA, TLS options) and user (client
 * certificate, bearer token or token file, basic auth), with relative file
 * paths resolved against the kubeconfig's directory as client-go does.
 *
 * klet reads kubeconfigs itself rather than through client-node's KubeConfig:
 * that class imports client-node's generated API layer (every API group and
 * ~1000 model classes), which stayed resident in every `klet sync
 * --kubeconfig` — ~26 MB of its JS heap and ~85 MB of RSS, most of the
 * difference from the standalone sync (bench/README, issue 39).
 * Credential plugins (`exec`, `auth-provider`) are refused with a message
 * naming the user: a kubelet's kubeconfig holds a client certificate (after
 * TLS bootstrap) or a token.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { errorMessage, InputError } from '../errors.js';
import { redact } from './errors.js';

export interface KubeconfigCluster {
  name: string;
  /** The server URL without trailing slashes. */
  server: string;
  /** certificate-authority, absolute. */
  caFile?: string;
  /** certificate-authority-data (base64). */
  caData?: string;
  insecure: boolean;
  tlsServerName?: string;
}

export interface KubeconfigUser {
  name: string;
  /** client-certificate / client-key, absolute. */
  certFile?: string;
  keyFile?: string;
  /** client-certificate-data / client-key-data (base64). */
  certData?: string;
  keyData?: string;
  token?: string;
  /** tokenFile, absolute: read again as client-go does (it may be rotated). */
  tokenFile?: string;
  username?: string;
  password?: string;
}

export interface LoadedKubeconfig {
  /** The kubeconfig's own path. */
  path: string;
  server: string;
  cluster: KubeconfigCluster;
  user: KubeconfigUser;
  /** Credentials found in it: never to appear in a message. */
  secrets: string[];
}

type Named = { name?: unknown; [k: string]: unknown };

function entries(obj: Record<string, unknown>, key: string, inner: string, file: string): Map<string, Record<string, unknown>> {
  const list = obj[key];
  const out = new Map<string, Record<string, unknown>>();
  if (list === undefined || list === null) return out;
  if (!Array.isArray(list)) throw new InputError(`kubeconfig ${file}: ${key}: not a list`);
  list.forEach((e: Named, i) => {
    if (!e || typeof e !== 'object' || typeof e.name !== 'string' || e.name === '') throw new InputError(`kubeconfig ${file}: ${key}[${i}]: no name`);
    const body = e[inner];
    if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) throw new InputError(`kubeconfig ${file}: ${key}[${i}].${inner}: not a mapping`);
    out.set(e.name, (body as Record<string, unknown> | undefined) ?? {});
  });
  return out;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Read, parse and check a kubeconfig; errors name the file (and line), the
 * context, cluster or user, and never a credential.
 */
export async function loadKubeconfig(file: string): Promise<LoadedKubeconfig> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(`kubeconfig ${file}: ${code === 'ENOENT' ? 'no such file' : errorMessage(err)}`);
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, lineCounter });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    const line = lineCounter.linePos(e.pos[0]).line;
    throw new InputError(`kubeconfig ${file}${line ? `:${line}` : ''}: not YAML: ${e.message.split('\n')[0]}`);
  }
  const obj = doc.toJS() as unknown;
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new InputError(`kubeconfig ${file}: not a kubeconfig (expected a mapping with clusters, users and contexts)`);
  const o = obj as Record<string, unknown>;
  const dir = path.dirname(path.resolve(file));
  const abs = (p: string | undefined) => (p === undefined ? undefined : path.resolve(dir, p));
  const clusters = entries(o, 'clusters', 'cluster', file);
  const users = entries(o, 'users', 'user', file);
  const contexts = entries(o, 'contexts', 'context', file);

  const secrets: string[] = [];
  for (const u of users.values()) for (const k of ['token', 'password', 'client-key-data']) if (str(u[k])) secrets.push(u[k] as string);

  const current = str(o['current-context']);
  if (!current) throw new InputError(`kubeconfig ${file}: no current-context`);
  const ctx = contexts.get(current);
  if (!ctx) throw new InputError(`kubeconfig ${file}: current-context "${current}" is not among its contexts`);
  const clusterName = str(ctx.cluster) ?? '';
  const c = clusters.get(clusterName);
  if (!c) throw new InputError(`kubeconfig ${file}: context "${current}" names cluster "${clusterName}", which is not among its clusters`);
  const userName = str(ctx.user);
  const u = userName === undefined ? {} : users.get(userName);
  if (!u) throw new InputError(`kubeconfig ${file}: context "${current}" names user "${userName}", which is not among its users`);

  const server = str(c.server);
  if (!server) throw new InputError(`kubeconfig ${file}: cluster "${clusterName}" has no server`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new InputError(`kubeconfig ${file}: cluster "${clusterName}" server "${redact(server, secrets)}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InputError(`kubeconfig ${file}: cluster "${clusterName}" server "${server}" is not an http(s) URL`);
  if (str(c['proxy-url'])) throw new InputError(`kubeconfig ${file}: cluster "${clusterName}" proxy-url: klet talks to the API server directly (no proxy)`);

  const uname = userName ?? '';
  for (const plugin of ['exec', 'auth-provider']) {
    if (u[plugin] !== undefined && u[plugin] !== null) {
      throw new InputError(`kubeconfig ${file}: user "${uname}" ${plugin}: credential plugins are not supported by klet (use a client certificate or a token)`);
    }
  }
  const cluster: KubeconfigCluster = {
    name: clusterName,
    server: server.replace(/\/+$/, ''),
    ...(str(c['certificate-authority']) ? { caFile: abs(str(c['certificate-authority'])) } : {}),
    ...(str(c['certificate-authority-data']) ? { caData: str(c['certificate-authority-data']) } : {}),
    insecure: c['insecure-skip-tls-verify'] === true,
    ...(str(c['tls-server-name']) ? { tlsServerName: str(c['tls-server-name']) } : {}),
  };
  const user: KubeconfigUser = {
    name: uname,
    ...(str(u['client-certificate']) ? { certFile: abs(str(u['client-certificate'])) } : {}),
    ...(str(u['client-key']) ? { keyFile: abs(str(u['client-key'])) } : {}),
    ...(str(u['client-certificate-data']) ? { certData: str(u['client-certificate-data']) } : {}),
    ...(str(u['client-key-data']) ? { keyData: str(u['client-key-data']) } : {}),
    ...(str(u.token) ? { token: str(u.token) } : {}),
    ...(str(u.tokenFile) ? { tokenFile: abs(str(u.tokenFile)) } : {}),
    ...(str(u.username) ? { username: str(u.username) } : {}),
    ...(str(u.password) ? { password: str(u.password) } : {}),
  };
  await checkClientCertificate(file, user);
  return { path: file, server: cluster.server, cluster, user, secrets };
}

/**
 * A user with a client certificate (client-certificate/client-key files, as
 * the kubelet's TLS bootstrap writes, or inline data): both halves present,
 * readable and PEM, each error naming the kubeconfig and the file.
 */
async function checkClientCertificate(file: string, user: KubeconfigUser): Promise<void> {
  const hasCert = Boolean(user.certFile || user.certData);
  const hasKey = Boolean(user.keyFile || user.keyData);
  if (hasCert !== hasKey) throw new InputError(`kubeconfig ${file}: user "${user.name}" has a client ${hasCert ? 'certificate without its key' : 'key without its certificate'}`);
  const read = async (field: string, f: string | undefined, data: string | undefined, check: (pem: string) => unknown) => {
    let pem: string;
    if (f) {
      try {
        pem = await fs.readFile(f, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw new InputError(`kubeconfig ${file}: user "${user.name}" ${field} ${f}: ${code === 'ENOENT' ? 'no such file' : errorMessage(err)}`);
      }
    } else if (data) {
      pem = Buffer.from(data, 'base64').toString('utf8');
    } else {
      return;
    }
    try {
      check(pem);
    } catch {
      throw new InputError(`kubeconfig ${file}: user "${user.name}" ${field}${f ? ` ${f}` : '-data'}: not PEM`);
    }
  };
  const { X509Certificate, createPrivateKey } = await import('node:crypto');
  await read('client-certificate', user.certFile, user.certData, (pem) => new X509Certificate(pem));
  await read('client-key', user.keyFile, user.keyData, (pem) => createPrivateKey(pem));
}
