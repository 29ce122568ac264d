import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/lib/errors.js';
import { parseNodeLabels, parseReservation, parseTaints, validateNodeIP, validateNodeName } from '../../src/lib/node/config.js';

describe('validateNodeName', () => {
  it('accepts DNS subdomains and rejects the rest with a message naming the name', () => {
    expect(() => validateNodeName('node-1.example.com')).not.toThrow();
    for (const bad of ['Node_1', '-node', 'node..a', 'a'.repeat(254), '']) {
      expect(() => validateNodeName(bad)).toThrow(InputError);
    }
    expect(() => validateNodeName('Node_1')).toThrow(/^node name "Node_1": .*lowercase RFC 1123 subdomain/);
  });
});

describe('parseTaints (pkg/util/taints ParseTaints)', () => {
  it('parses key=value:Effect and key:Effect lists', () => {
    expect(parseTaints('dedicated=edge:NoSchedule,example.com/gpu:NoExecute,a=:PreferNoSchedule')).toEqual([
      { key: 'dedicated', value: 'edge', effect: 'NoSchedule' },
      { key: 'example.com/gpu', effect: 'NoExecute' },
      { key: 'a', value: '', effect: 'PreferNoSchedule' },
    ]);
    expect(parseTaints('')).toEqual([]);
  });
  it.each([
    ['dedicated=edge', /not key=value:Effect/],
    ['dedicated=edge:Never', /effect "Never" is not one of NoSchedule, PreferNoSchedule, NoExecute/],
    ['bad key=x:NoSchedule', /key "bad key"/],
    ['k=bad value:NoSchedule', /value "bad value"/],
    ['k=a:NoSchedule,k=b:NoSchedule', /duplicate key and effect k:NoSchedule/],
  ])('rejects %s', (text, msg) => {
    expect(() => parseTaints(text)).toThrow(msg);
  });
});

describe('parseNodeLabels', () => {
  it('parses k=v lists, allowing the kubelet label namespaces', () => {
    expect(parseNodeLabels('a=b,node.kubernetes.io/pool=edge,topology.kubernetes.io/zone=z1,example.com/x=')).toEqual({
      a: 'b',
      'node.kubernetes.io/pool': 'edge',
      'topology.kubernetes.io/zone': 'z1',
      'example.com/x': '',
    });
  });
  it('rejects labels NodeRestriction forbids a node to set, and malformed ones', () => {
    expect(() => parseNodeLabels('node-role.kubernetes.io/control-plane=')).toThrow(/label "node-role.kubernetes.io\/control-plane": a node may not set/);
    expect(() => parseNodeLabels('foo.k8s.io/x=1')).toThrow(/NodeRestriction/);
    expect(() => parseNodeLabels('novalue')).toThrow(/label "novalue": not key=value/);
    expect(() => parseNodeLabels('a=b c')).toThrow(/label "a" value "b c"/);
  });
});

describe('parseReservation', () => {
  it('reads cpu, memory, ephemeral-storage and pid in base units', () => {
    expect(parseReservation('cpu=100m,memory=256Mi,ephemeral-storage=1Gi,pid=1000')).toEqual({
      cpuMilli: 100,
      memoryBytes: 256 * 1024 * 1024,
      ephemeralStorageBytes: 1024 ** 3,
      pid: 1000,
    });
  });
  it('rejects unknown resources, bad quantities and negatives', () => {
    expect(() => parseReservation('gpu=1')).toThrow(/resource "gpu" is not one of/);
    expect(() => parseReservation('cpu=lots')).toThrow(/reservation "cpu=lots"/);
    expect(() => parseReservation('memory=-1Gi')).toThrow(/must not be negative/);
  });
});

describe('validateNodeIP', () => {
  it('accepts IPv4/IPv6 and rejects anything else', () => {
    expect(() => validateNodeIP('10.0.0.5')).not.toThrow();
    expect(() => validateNodeIP('fd00::5')).not.toThrow();
    expect(() => validateNodeIP('10.0.0.256')).toThrow(/node IP "10.0.0.256": not an IP address/);
    expect(() => validateNodeIP('0.0.0.0')).toThrow(/unspecified/);
  });
});
