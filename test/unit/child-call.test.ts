import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { selfSigned } from '../../src/lib/server/serving-cert.js';
import { callInChild } from '../../src/lib/util/child-call.js';

describe('callInChild', () => {
  it('runs the function in another process and hands back its result', async () => {
    const r = await callInChild<{ pid: number; greeting: string }>(import.meta.url, './fixtures/child-fn', 'whoAmI', ['hello']);
    expect(r.greeting).toBe('hello');
    expect(r.pid).not.toBe(process.pid);
  });

  it("rejects with the child's error message", async () => {
    await expect(callInChild(import.meta.url, './fixtures/child-fn', 'fails', [])).rejects.toThrow(/^it went wrong in the child$/);
  });

  it('rejects, naming the function, when the child cannot run it', async () => {
    await expect(callInChild(import.meta.url, './fixtures/no-such-module', 'whoAmI', [])).rejects.toThrow(/Cannot find module|ERR_MODULE_NOT_FOUND/);
  });

  it('rejects with the exit code and the last line of stderr when the child dies without answering', async () => {
    await expect(callInChild(import.meta.url, './fixtures/child-fn', 'exits', [])).rejects.toThrow(/^exits: its child process exited with code 3: leaving now$/);
  });

  it('makes the self-signed serving certificate without loading @peculiar/x509 here', async () => {
    // reflect-metadata, which @peculiar/x509 needs, installs Reflect.getMetadata when loaded.
    const marker = () => (Reflect as unknown as Record<string, unknown>).getMetadata;
    expect(marker()).toBeUndefined();
    const { cert, key } = await selfSigned('node-1', ['10.1.2.3'], new Date());
    const x = new X509Certificate(cert);
    expect(x.checkPrivateKey((await import('node:crypto')).createPrivateKey(key))).toBe(true);
    expect(x.subjectAltName).toContain('IP Address:10.1.2.3');
    expect(marker()).toBeUndefined();
  });
});
