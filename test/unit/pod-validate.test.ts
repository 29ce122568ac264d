import type { V1ConfigMap, V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { applyPodDefaults } from '../../src/lib/pod/defaults.js';
import { FieldPath } from '../../src/lib/pod/field.js';
import { isDNS1123Label, isEnvVarName, isQualifiedName, isValidPortName } from '../../src/lib/pod/names.js';
import { validateConfigMap, validatePod, validateSecret } from '../../src/lib/pod/validate.js';

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/** A valid, defaulted pod; each case changes one thing. */
function base(): V1Pod {
  return applyPodDefaults({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
    spec: {
      containers: [
        {
          name: 'app',
          image: 'nginx:1.27',
          ports: [{ name: 'http', containerPort: 80 }],
          env: [{ name: 'MODE', value: 'prod' }],
          resources: { requests: { cpu: '100m' }, limits: { cpu: '1', memory: '128Mi' } },
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  });
}

function app(p: V1Pod): V1Container {
  return p.spec?.containers[0] as V1Container;
}

/** Drop the container's mounts, so a volume error does not also show as a mount error. */
function withoutMounts(p: V1Pod, change: () => unknown): void {
  app(p).volumeMounts = [];
  change();
}

function errorsOf(change: (p: V1Pod) => void): string[] {
  const p = base();
  change(p);
  return validatePod(p).map(String);
}

describe('validatePod', () => {
  it('accepts a valid defaulted pod', () => {
    expect(validatePod(base())).toEqual([]);
  });

  // [what, change to the valid pod, the exact errors]
  const cases: [string, (p: V1Pod) => void, string[]][] = [
    ['name missing', (p) => delete p.metadata?.name, ['metadata.name: Required value: name or generateName is required']],
    ['name not a DNS subdomain', (p) => (p.metadata!.name = 'Foo_Bar'), [`metadata.name: Invalid value: "Foo_Bar": ${SUBDOMAIN_MSG}`]],
    ['dotted names are fine', (p) => (p.metadata!.name = 'web.example'), []],
    ['namespace not a DNS label', (p) => (p.metadata!.namespace = 'Kube_System'), [`metadata.namespace: Invalid value: "Kube_System": ${LABEL_MSG}`]],
    ['namespace with dots', (p) => (p.metadata!.namespace = 'a.b'), ['metadata.namespace: Invalid value: "a.b": must not contain dots']],
    ['namespace missing', (p) => delete p.metadata?.namespace, ['metadata.namespace: Required value']],
    [
      'label value invalid',
      (p) => (p.metadata!.labels = { app: '-web-' }),
      [
        `metadata.labels: Invalid value: "-web-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
      ],
    ],
    ['label key with bad prefix', (p) => (p.metadata!.labels = { 'Example.com/app': 'x' }), [`metadata.labels: Invalid value: "Example.com/app": prefix part ${SUBDOMAIN_MSG}`]],
    ['annotation keys are checked, values are free', (p) => (p.metadata!.annotations = { 'a/b/c': 'anything at all!' }), [
      `metadata.annotations: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ]],
    ['no containers', (p) => (p.spec!.containers = []), ['spec.containers: Required value']],
    ['container name invalid', (p) => (app(p).name = 'App'), [`spec.containers[0].name: Invalid value: "App": ${LABEL_MSG}`]],
    ['container name missing', (p) => (app(p).name = ''), ['spec.containers[0].name: Required value']],
    [
      'duplicate container names',
      (p) => p.spec!.containers.push({ ...app(p), volumeMounts: [], ports: [] }),
      ['spec.containers[1].name: Duplicate value: "app"'],
    ],
    [
      'init container named like an app container',
      (p) => (p.spec!.initContainers = [{ name: 'app', image: 'busybox', imagePullPolicy: 'Always', terminationMessagePolicy: 'File' }]),
      ['spec.initContainers[0].name: Duplicate value: "app"'],
    ],
    ['image missing', (p) => delete app(p).image, ['spec.containers[0].image: Required value']],
    ['image with spaces', (p) => (app(p).image = ' nginx'), ['spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace']],
    ['imagePullPolicy unknown', (p) => (app(p).imagePullPolicy = 'Sometimes'), [
      'spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"',
    ]],
    ['restartPolicy unknown', (p) => (p.spec!.restartPolicy = 'Sometimes'), [
      'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"',
    ]],
    [
      'init container restartPolicy other than Always',
      (p) => (p.spec!.initContainers = [{ name: 'init', image: 'busybox', imagePullPolicy: 'Always', terminationMessagePolicy: 'File', restartPolicy: 'OnFailure' }]),
      ['spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'],
    ],
    [
      'sidecar init containers may have probes',
      (p) =>
        (p.spec!.initContainers = [
          { name: 'proxy', image: 'envoy', imagePullPolicy: 'Always', terminationMessagePolicy: 'File', restartPolicy: 'Always', readinessProbe: { tcpSocket: { port: 9901 } } },
        ]),
      [],
    ],
    [
      'plain init containers may not',
      (p) => (p.spec!.initContainers = [{ name: 'init', image: 'busybox', imagePullPolicy: 'Always', terminationMessagePolicy: 'File', livenessProbe: { exec: { command: ['true'] } } }]),
      ['spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always'],
    ],
    ['app container restartPolicy', (p) => (app(p).restartPolicy = 'Always'), ['spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers']],
    ['containerPort missing', (p) => (app(p).ports![0]!.containerPort = 0), ['spec.containers[0].ports[0].containerPort: Required value']],
    ['containerPort out of range', (p) => (app(p).ports![0]!.containerPort = 70000), [
      'spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive',
    ]],
    ['hostPort out of range', (p) => (app(p).ports![0]!.hostPort = -1), ['spec.containers[0].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive']],
    ['port protocol unknown', (p) => (app(p).ports![0]!.protocol = 'ICMP'), [
      'spec.containers[0].ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
    ]],
    ['port name not an IANA_SVC_NAME', (p) => (app(p).ports![0]!.name = 'HTTP--1'), [
      'spec.containers[0].ports[0].name: Invalid value: "HTTP--1": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
      'spec.containers[0].ports[0].name: Invalid value: "HTTP--1": must contain at least one letter (a-z)',
      'spec.containers[0].ports[0].name: Invalid value: "HTTP--1": must not contain consecutive hyphens',
    ]],
    ['duplicate port names', (p) => app(p).ports!.push({ name: 'http', containerPort: 81, protocol: 'TCP' }), ['spec.containers[0].ports[1].name: Duplicate value: "http"']],
    ['env name invalid', (p) => (app(p).env![0]!.name = '1BAD'), [
      `spec.containers[0].env[0].name: Invalid value: "1BAD": a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')`,
    ]],
    ['env names may have dots and dashes', (p) => (app(p).env![0]!.name = 'my.env-name'), []],
    ['valueFrom without a source', (p) => (app(p).env = [{ name: 'X', valueFrom: {} }]), [
      'spec.containers[0].env[0].valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`',
    ]],
    [
      'valueFrom with two sources',
      (p) => (app(p).env = [{ name: 'X', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' }, secretKeyRef: { name: 's', key: 'k' } } }]),
      ['spec.containers[0].env[0].valueFrom: Invalid value: "": may not have more than one field specified at a time'],
    ],
    [
      'value and valueFrom',
      (p) => (app(p).env = [{ name: 'X', value: 'v', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }]),
      ['spec.containers[0].env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty'],
    ],
    [
      'fieldRef paths the downward API supports for env',
      (p) =>
        (app(p).env = [
          'metadata.name',
          'metadata.namespace',
          'metadata.uid',
          "metadata.labels['app']",
          "metadata.annotations['example.com/x']",
          'spec.nodeName',
          'spec.serviceAccountName',
          'status.hostIP',
          'status.hostIPs',
          'status.podIP',
          'status.podIPs',
        ].map((fieldPath, i) => ({ name: `V${i}`, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } }))),
      [],
    ],
    [
      'fieldRef path it does not',
      (p) => (app(p).env = [{ name: 'X', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.phase' } } }]),
      [
        'spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"',
      ],
    ],
    [
      'fieldRef path that does not exist',
      (p) => (app(p).env = [{ name: 'X', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.hostname' } } }]),
      ['spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Invalid value: "spec.hostname": error converting fieldPath: field label not supported: spec.hostname'],
    ],
    ['secretKeyRef key missing', (p) => (app(p).env = [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: '' } } }]), ['spec.containers[0].env[0].valueFrom.secretKeyRef.key: Required value']],
    ['requests above limits', (p) => (app(p).resources!.requests!.cpu = '2'), ['spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 1']],
    ['requests equal to limits in another unit', (p) => (app(p).resources!.requests!.cpu = '1000m'), []],
    [
      'negative limit',
      (p) => (app(p).resources!.limits!.memory = '-1'),
      [
        'spec.containers[0].resources.limits[memory]: Invalid value: "-1": must be greater than or equal to 0',
        // The request was defaulted from the old limit; Go reports this too.
        'spec.containers[0].resources.requests[memory]: Invalid value: "128Mi": must be less than or equal to memory limit of -1',
      ],
    ],
    ['malformed quantity', (p) => (app(p).resources!.limits!.memory = '1.5.5'), [
      "spec.containers[0].resources.limits[memory]: Invalid value: \"1.5.5\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ]],
    ['unknown resource', (p) => (app(p).resources!.limits = { gpu: '1' }), ['spec.containers[0].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource for containers']],
    [
      'extended resources need equal limits and whole numbers',
      (p) => (app(p).resources = { requests: { 'example.com/gpu': '500m' } }),
      ['spec.containers[0].resources.requests[example.com/gpu]: Invalid value: "500m": must be an integer', 'spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources'],
    ],
    ['volume name invalid', (p) => (p.spec!.volumes![0]!.name = 'Data'), [
      `spec.volumes[0].name: Invalid value: "Data": ${LABEL_MSG}`,
      // The mount then refers to a volume that does not exist.
      'spec.containers[0].volumeMounts[0].name: Not found: "data"',
    ]],
    ['duplicate volume names', (p) => p.spec!.volumes!.push({ name: 'data', emptyDir: { medium: '' } }), ['spec.volumes[1].name: Duplicate value: "data"']],
    ['two volume sources', (p) => withoutMounts(p, () => (p.spec!.volumes![0]!.hostPath = { path: '/x', type: '' })), ['spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type']],
    ['hostPath type unknown', (p) => withoutMounts(p, () => (p.spec!.volumes = [{ name: 'data', hostPath: { path: '/srv', type: 'Folder' } }])), [
      'spec.volumes[0].hostPath.type: Unsupported value: "Folder": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"',
    ]],
    ['hostPath path with ..', (p) => withoutMounts(p, () => (p.spec!.volumes = [{ name: 'data', hostPath: { path: '/srv/../etc', type: '' } }])), [
      "spec.volumes[0].hostPath.path: Invalid value: \"/srv/../etc\": must not contain '..'",
    ]],
    ['configMap volume without name', (p) => withoutMounts(p, () => (p.spec!.volumes = [{ name: 'data', configMap: { defaultMode: 420 } }])), ['spec.volumes[0].configMap.name: Required value']],
    ['secret defaultMode too large', (p) => withoutMounts(p, () => (p.spec!.volumes = [{ name: 'data', secret: { secretName: 's', defaultMode: 0o1000 } }])), [
      'spec.volumes[0].secret.defaultMode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive',
    ]],
    ['mount of an unknown volume', (p) => (app(p).volumeMounts![0]!.name = 'nope'), ['spec.containers[0].volumeMounts[0].name: Not found: "nope"']],
    ['relative mountPath', (p) => (app(p).volumeMounts![0]!.mountPath = 'data'), ['spec.containers[0].volumeMounts[0].mountPath: Invalid value: "data": must be an absolute path']],
    ['same mountPath twice', (p) => app(p).volumeMounts!.push({ name: 'data', mountPath: '/data' }), ['spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique']],
    ['negative terminationGracePeriodSeconds', (p) => (p.spec!.terminationGracePeriodSeconds = -1), ['spec.terminationGracePeriodSeconds: Invalid value: -1: must be greater than or equal to 0']],
    ['activeDeadlineSeconds 0', (p) => (p.spec!.activeDeadlineSeconds = 0), ['spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive']],
    ['dnsPolicy unknown', (p) => (p.spec!.dnsPolicy = 'Google'), [
      'spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"',
    ]],
    ['dnsPolicy None needs dnsConfig', (p) => (p.spec!.dnsPolicy = 'None'), ['spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None']],
    ['dnsPolicy None needs a nameserver', (p) => Object.assign(p.spec!, { dnsPolicy: 'None', dnsConfig: { searches: ['a.example'] } }), [
      'spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None',
    ]],
    ['dnsConfig: 4 nameservers, one not an IP', (p) => (p.spec!.dnsConfig = { nameservers: ['1.1.1.1', '1.0.0.1', '8.8.8.8', 'dns'] }), [
      'spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","1.0.0.1","8.8.8.8","dns"]: must not have more than 3 nameservers',
      'spec.dnsConfig.nameservers[3]: Invalid value: "dns": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
    ]],
    ['dnsConfig: 33 searches', (p) => (p.spec!.dnsConfig = { searches: Array.from({ length: 33 }, (_, i) => `s${i}`) }), [
      expect.stringMatching(/^spec\.dnsConfig\.searches: Invalid value: \["s0",.*: must not have more than 32 search paths$/),
    ]],
    ['dnsConfig: searches of 2049 characters', (p) => (p.spec!.dnsConfig = { searches: Array.from({ length: 8 }, (_, i) => Array(4).fill('abcdefgh'[i]!.repeat(62)).join('.')).concat(['y'.repeat(33)]) }), [
      expect.stringMatching(/: must not have more than 2048 characters \(including spaces\) in the search list$/),
    ]],
    ['dnsConfig: searches with "_", a trailing dot and "." are fine; "Bad" is not; an option needs a name', (p) => (p.spec!.dnsConfig = { searches: ['_srv.example.', '.', 'Bad'], options: [{ value: '1' }] }), [
      expect.stringMatching(/^spec\.dnsConfig\.searches\[2\]: Invalid value: "Bad": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '\.'/),
      'spec.dnsConfig.options[0]: Required value: must not be empty',
    ]],
    ['hostAliases: a bad IP, a bad hostname', (p) => (p.spec!.hostAliases = [{ ip: 'host', hostnames: ['ok.example', 'Not_OK'] }]), [
      'spec.hostAliases[0].ip: Invalid value: "host": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)',
      expect.stringMatching(/^spec\.hostAliases\[0\]\.hostnames\[1\]: Invalid value: "Not_OK": a lowercase RFC 1123 subdomain/),
    ]],
    [
      'hostNetwork with a different hostPort',
      (p) => {
        p.spec!.hostNetwork = true;
        app(p).ports![0]!.hostPort = 8080;
      },
      ['spec.containers[0].ports[0].containerPort: Invalid value: 80: must match `hostPort` when `hostNetwork` is true'],
    ],
    [
      'the same host port twice',
      (p) => {
        app(p).ports = [
          { name: 'a', containerPort: 80, hostPort: 8080, protocol: 'TCP' },
          { name: 'b', containerPort: 81, hostPort: 8080, protocol: 'TCP' },
        ];
      },
      ['spec.containers[0].ports[1].hostPort: Duplicate value: "TCP//8080"'],
    ],
    ['probe without a handler', (p) => (app(p).livenessProbe = { periodSeconds: 10 }), ['spec.containers[0].livenessProbe: Required value: must specify a handler type']],
    ['probe with two handlers', (p) => (app(p).readinessProbe = { exec: { command: ['true'] }, tcpSocket: { port: 80 } }), [
      'spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type',
    ]],
    ['liveness successThreshold', (p) => (app(p).livenessProbe = { exec: { command: ['true'] }, successThreshold: 2 }), ['spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1']],
    ['probe port name', (p) => (app(p).readinessProbe = { httpGet: { port: 'HTTP', path: '/', scheme: 'HTTP' } }), [
      'spec.containers[0].readinessProbe.httpGet.port: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)',
      'spec.containers[0].readinessProbe.httpGet.port: Invalid value: "HTTP": must contain at least one letter (a-z)',
    ]],
    ['probe port 0', (p) => (app(p).livenessProbe = { tcpSocket: { port: 0 } }), [
      'spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive',
    ]],
    ['probe port 70000', (p) => (app(p).readinessProbe = { grpc: { port: 70000 } }), [
      'spec.containers[0].readinessProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive',
    ]],
    ['negative probe thresholds', (p) => (app(p).readinessProbe = { exec: { command: ['true'] }, failureThreshold: -1, successThreshold: -2 }), [
      'spec.containers[0].readinessProbe.successThreshold: Invalid value: -2: must be greater than or equal to 0',
      'spec.containers[0].readinessProbe.failureThreshold: Invalid value: -1: must be greater than or equal to 0',
    ]],
    ['toleration Exists with a value', (p) => (p.spec!.tolerations = [{ key: 'k', operator: 'Exists', value: 'v' }]), [
      "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
    ]],
  ];
  it.each(cases)('%s', (_what, change, want) => {
    expect(errorsOf(change)).toEqual(want);
  });

  it('reports subPath errors at the mount', () => {
    expect(errorsOf((p) => (app(p).volumeMounts![0]!.subPath = '/etc'))).toEqual([
      'spec.containers[0].volumeMounts[0].subPath: Invalid value: "/etc": must be a relative path',
    ]);
  });

  it('limits names to 253 characters', () => {
    const errs = errorsOf((p) => (p.metadata!.name = 'a'.repeat(254)));
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatch(/^metadata\.name: Invalid value: "a+\.\.\.": must be no more than 253 characters$/);
  });

  it('collects every error, not just the first', () => {
    const errs = errorsOf((p) => {
      p.metadata!.name = 'Bad_Name';
      app(p).image = '';
      p.spec!.containers.push({ name: 'app', image: 'x', imagePullPolicy: 'Always', terminationMessagePolicy: 'File' });
      p.spec!.restartPolicy = 'Sometimes';
    });
    expect(errs.map((e) => e.split(':')[0])).toEqual(['metadata.name', 'spec.containers[0].image', 'spec.containers[1].name', 'spec.restartPolicy']);
  });
});

describe('validateConfigMap / validateSecret', () => {
  it('accepts valid objects', () => {
    const cm: V1ConfigMap = { metadata: { name: 'cfg', namespace: 'default' }, data: { 'app.conf': 'x', KEY_NAME: 'y' } };
    const secret: V1Secret = { metadata: { name: 's', namespace: 'default' }, type: 'Opaque', data: { 'key-name': 'eA==' }, stringData: { other: 'x' } };
    expect(validateConfigMap(cm)).toEqual([]);
    expect(validateSecret(secret)).toEqual([]);
  });

  it('checks names and keys', () => {
    const cm: V1ConfigMap = { metadata: { name: 'Cfg', namespace: 'default' }, data: { 'bad key': 'x', '..dots': 'y' } };
    expect(validateConfigMap(cm).map(String)).toEqual([
      `metadata.name: Invalid value: "Cfg": ${SUBDOMAIN_MSG}`,
      `data[bad key]: Invalid value: "bad key": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
      `data[..dots]: Invalid value: "..dots": must not start with '..'`,
    ]);
  });

  it('checks keys in stringData too, and what typed secrets require', () => {
    const secret: V1Secret = { metadata: { name: 's', namespace: 'default' }, type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'x', 'a b': 'y' } };
    expect(validateSecret(secret).map(String)).toEqual([
      `stringData[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
      'data[tls.key]: Required value',
    ]);
  });

  it('wants valid JSON in docker config secrets', () => {
    const secret: V1Secret = {
      metadata: { name: 's', namespace: 'default' },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': Buffer.from('{not json').toString('base64') },
    };
    expect(validateSecret(secret).map(String)).toEqual([expect.stringMatching(/^data\[\.dockerconfigjson\]: Invalid value: "<secret contents redacted>": /)]);
  });
});

describe('name syntax', () => {
  const cases: [string, (v: string) => string[], string, boolean][] = [
    ['label', isDNS1123Label, 'my-name', true],
    ['label', isDNS1123Label, '123-abc', true],
    ['label', isDNS1123Label, '-a', false],
    ['label', isDNS1123Label, 'a'.repeat(64), false],
    ['qualified', isQualifiedName, 'example.com/MyName', true],
    ['qualified', isQualifiedName, 'my.name', true],
    ['qualified', isQualifiedName, '/name', false],
    ['qualified', isQualifiedName, 'a/b/c', false],
    ['env', isEnvVarName, '_X.y-z', true],
    ['env', isEnvVarName, '9X', false],
    ['env', isEnvVarName, '..', false],
    ['port name', isValidPortName, 'http-alt', true],
    ['port name', isValidPortName, '8080', false],
    ['port name', isValidPortName, 'a-very-long-port-name', false],
  ];
  it.each(cases)('%s %j valid=%s', (_kind, fn, value, ok) => {
    expect(fn(value).length === 0).toBe(ok);
  });

  it('prints paths like field.Path', () => {
    expect(FieldPath.of('spec', 'containers').index(0).child('resources', 'limits').key('cpu').toString()).toBe('spec.containers[0].resources.limits[cpu]');
  });
});
