/**
 * The Kubernetes release klet follows is named once (node/version.ts): node
 * status' kubeletVersion and the probes' User-Agent come from it, and it is
 * the release the cluster tests run against (test/cluster/go.mod).
 */
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROBE_USER_AGENT as httpUserAgent } from '../../src/lib/prober/http.js';
import { KUBERNETES_VERSION, kubeletVersion, PROBE_USER_AGENT } from '../../src/lib/node/version.js';

describe('the Kubernetes version klet follows', () => {
  it('is the release test/cluster/go.mod pins', () => {
    const mod = fs.readFileSync(new URL('../cluster/go.mod', import.meta.url), 'utf8');
    expect(/^require k8s\.io\/kubernetes (v\S+)/m.exec(mod)?.[1]).toBe(KUBERNETES_VERSION);
  });

  it('gives kubeletVersion with klet as build metadata, and the probes kube-probe/<major>.<minor>', () => {
    expect(kubeletVersion('0.1.0')).toBe(`${KUBERNETES_VERSION}+klet.0.1.0`);
    expect(kubeletVersion('1.2.0-rc.1')).toBe(`${KUBERNETES_VERSION}+klet.1.2.0-rc.1`);
    const [, major, minor] = /^v(\d+)\.(\d+)\./.exec(KUBERNETES_VERSION)!;
    expect(PROBE_USER_AGENT).toBe(`kube-probe/${major}.${minor}`);
    expect(httpUserAgent).toBe(PROBE_USER_AGENT);
  });
});
