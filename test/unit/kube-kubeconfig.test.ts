/**
 * klet's own kubeconfig reading (lib/kube/kubeconfig.ts): the current
 * context's cluster and user, relative paths resolved against the
 * kubeconfig's directory (client-go's rule), and one-line errors naming the
 * file and the entry for what klet does not do (credential plugins, proxies).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { loadKubeconfig } from '../../src/lib/kube/kubeconfig.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'klet-kubeconfig-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const write = (name: string, user: string, cluster = 'server: https://10.0.0.1:6443/\n    certificate-authority: pki/ca.crt') => {
  const file = path.join(dir, name);
  fs.writeFileSync(
    file,
    `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    ${cluster}\nusers:\n- name: u\n  user:\n    ${user}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`,
  );
  return file;
};

it('resolves the current context: server without its trailing slash, files relative to the kubeconfig, the token kept as a secret', async () => {
  const k = await loadKubeconfig(write('token.yaml', 'tokenFile: tok\n    token: s3cr3t-t0ken'));
  expect(k.server).toBe('https://10.0.0.1:6443');
  expect(k.cluster.caFile).toBe(path.join(dir, 'pki/ca.crt'));
  expect(k.cluster.insecure).toBe(false);
  expect(k.user.tokenFile).toBe(path.join(dir, 'tok'));
  expect(k.user.token).toBe('s3cr3t-t0ken');
  expect(k.secrets).toContain('s3cr3t-t0ken');
});

it('refuses credential plugins and proxies with one line naming the file and the entry, never a credential', async () => {
  const exec = write('exec.yaml', 'exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/get-token}\n    password: hunter22');
  await expect(loadKubeconfig(exec)).rejects.toThrow(`kubeconfig ${exec}: user "u" exec: credential plugins are not supported by klet (use a client certificate or a token)`);
  const proxy = write('proxy.yaml', 'token: t0ken-abcdef', 'server: https://10.0.0.1:6443\n    proxy-url: http://proxy:3128');
  await expect(loadKubeconfig(proxy)).rejects.toThrow(`kubeconfig ${proxy}: cluster "c" proxy-url: klet talks to the API server directly (no proxy)`);
  const bad = write('bad.yaml', 'token: t0ken-abcdef', 'server: "::not a url hunter22"');
  await expect(loadKubeconfig(bad)).rejects.toThrow(/is not a URL/);
  await expect(loadKubeconfig(exec)).rejects.not.toThrow(/hunter22/);
});
