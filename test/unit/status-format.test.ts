import { describe, expect, it } from 'vitest';
import { qosClass } from '../../src/lib/kuberuntime/resources.js';
import type { CoreV1Event, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import {
  describePod,
  describeProbe,
  formatPodTable,
  humanDuration,
  podSummary,
  podTableRows,
  tabwrite,
} from '../../src/lib/status/format.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;
const Y = 365 * D;

describe('humanDuration', () => {
  // apimachinery/pkg/util/duration TestHumanDuration and TestHumanDurationBoundaries.
  it.each([
    [S, '1s'],
    [70 * S, '70s'],
    [190 * S, '3m10s'],
    [70 * M, '70m'],
    [47 * H, '47h'],
    [49 * H, '2d1h'],
    [(8 * 24 + 2) * H, '8d'],
    [367 * D, '367d'],
    [(365 * 2 * 24 + 25) * H, '2y1d'],
    [(365 * 8 * 24 + 2) * H, '8y'],
    [-2 * S, '<invalid>'],
    [-2 * S + 1e-6, '0s'],
    [0, '0s'],
    [S - 1, '0s'],
    [2 * M - 1, '119s'],
    [2 * M, '2m'],
    [2 * M + S, '2m1s'],
    [10 * M - 1, '9m59s'],
    [10 * M, '10m'],
    [10 * M + S, '10m'],
    [3 * H - 1, '179m'],
    [3 * H, '3h'],
    [3 * H + M, '3h1m'],
    [8 * H - 1, '7h59m'],
    [8 * H, '8h'],
    [8 * H + 59 * M, '8h'],
    [2 * D - 1, '47h'],
    [2 * D, '2d'],
    [2 * D + H, '2d1h'],
    [8 * D - 1, '7d23h'],
    [8 * D, '8d'],
    [8 * D + 23 * H, '8d'],
    [2 * Y - 1, '729d'],
    [2 * Y, '2y'],
    [2 * Y + 23 * H, '2y'],
    [2 * Y + 23 * H + 59 * M, '2y'],
    [2 * Y + D - 1, '2y'],
    [2 * Y + D, '2y1d'],
    [3 * Y, '3y'],
    [7 * Y, '7y'],
    [8 * Y - 1, '7y364d'],
    [8 * Y, '8y'],
    [8 * Y + 364 * D, '8y'],
    [9 * Y, '9y'],
  ])('%d ms is %s', (ms, want) => {
    expect(humanDuration(ms)).toBe(want);
  });

  it('rejects non-numbers', () => {
    expect(humanDuration(Number.NaN)).toBe('<invalid>');
  });
});

const NOW = new Date('2024-05-01T12:00:00Z');
const ago = (ms: number): Date => new Date(NOW.getTime() - ms);

function cs(name: string, extra: Partial<V1ContainerStatus> = {}): V1ContainerStatus {
  return { name, image: 'busybox', imageID: '', ready: false, restartCount: 0, ...extra };
}

function pod(opts: {
  name?: string;
  containers?: string[];
  init?: Array<{ name: string; sidecar?: boolean }>;
  phase?: string;
  reason?: string;
  statuses?: V1ContainerStatus[];
  initStatuses?: V1ContainerStatus[];
  conditions?: Array<[string, string, string?]>;
  deleted?: boolean;
}): V1Pod {
  return {
    metadata: {
      name: opts.name ?? 'web',
      namespace: 'default',
      uid: '1',
      creationTimestamp: ago(3 * M + 10 * S),
      ...(opts.deleted === true ? { deletionTimestamp: ago(5 * S) } : {}),
    },
    spec: {
      containers: (opts.containers ?? ['app']).map((name) => ({ name, image: 'busybox' })),
      initContainers: (opts.init ?? []).map((c) => ({
        name: c.name,
        image: 'busybox',
        ...(c.sidecar === true ? { restartPolicy: 'Always' } : {}),
      })),
    },
    status: {
      phase: opts.phase ?? 'Running',
      ...(opts.reason === undefined ? {} : { reason: opts.reason }),
      podIP: '10.88.0.5',
      podIPs: [{ ip: '10.88.0.5' }],
      containerStatuses: opts.statuses ?? [],
      initContainerStatuses: opts.initStatuses ?? [],
      conditions: (opts.conditions ?? []).map(([type, status, reason]) => ({ type, status, ...(reason ? { reason } : {}) })),
    },
  };
}

const running = { running: { startedAt: ago(M) } };

describe('podSummary STATUS', () => {
  it.each<[string, V1Pod, string]>([
    ['running', pod({ statuses: [cs('app', { ready: true, state: running })] }), 'Running'],
    ['pending, no statuses', pod({ phase: 'Pending' }), 'Pending'],
    [
      'container creating',
      pod({ phase: 'Pending', statuses: [cs('app', { state: { waiting: { reason: 'ContainerCreating' } } })] }),
      'ContainerCreating',
    ],
    [
      'image pull back-off',
      pod({ phase: 'Pending', statuses: [cs('app', { state: { waiting: { reason: 'ImagePullBackOff' } } })] }),
      'ImagePullBackOff',
    ],
    [
      'config error',
      pod({ phase: 'Pending', statuses: [cs('app', { state: { waiting: { reason: 'CreateContainerConfigError' } } })] }),
      'CreateContainerConfigError',
    ],
    [
      'first container wins',
      pod({
        containers: ['a', 'b'],
        statuses: [
          cs('a', { state: { waiting: { reason: 'CrashLoopBackOff' } } }),
          cs('b', { state: { waiting: { reason: 'ErrImagePull' } } }),
        ],
      }),
      'CrashLoopBackOff',
    ],
    ['terminated reason', pod({ phase: 'Failed', statuses: [cs('app', { state: { terminated: { exitCode: 1, reason: 'Error' } } })] }), 'Error'],
    ['exit code', pod({ phase: 'Failed', statuses: [cs('app', { state: { terminated: { exitCode: 3 } } })] }), 'ExitCode:3'],
    ['signal', pod({ phase: 'Failed', statuses: [cs('app', { state: { terminated: { exitCode: 137, signal: 9 } } })] }), 'Signal:9'],
    [
      'completed',
      pod({ phase: 'Succeeded', statuses: [cs('app', { state: { terminated: { exitCode: 0, reason: 'Completed' } } })] }),
      'Completed',
    ],
    ['pod reason', pod({ phase: 'Failed', reason: 'Evicted' }), 'Evicted'],
    ['scheduling gated', pod({ phase: 'Pending', conditions: [['PodScheduled', 'False', 'SchedulingGated']] }), 'SchedulingGated'],
    [
      'init running',
      pod({
        phase: 'Pending',
        init: [{ name: 'i1' }, { name: 'i2' }],
        initStatuses: [cs('i1', { state: running }), cs('i2', { state: { waiting: { reason: 'PodInitializing' } } })],
        statuses: [cs('app', { state: { waiting: { reason: 'PodInitializing' } } })],
      }),
      'Init:0/2',
    ],
    [
      'second init running',
      pod({
        phase: 'Pending',
        init: [{ name: 'i1' }, { name: 'i2' }],
        initStatuses: [cs('i1', { state: { terminated: { exitCode: 0, reason: 'Completed' } } }), cs('i2', { state: running })],
      }),
      'Init:1/2',
    ],
    [
      'init crash loop',
      pod({ phase: 'Pending', init: [{ name: 'i1' }], initStatuses: [cs('i1', { state: { waiting: { reason: 'CrashLoopBackOff' } } })] }),
      'Init:CrashLoopBackOff',
    ],
    [
      'init error',
      pod({ phase: 'Failed', init: [{ name: 'i1' }], initStatuses: [cs('i1', { state: { terminated: { exitCode: 1, reason: 'Error' } } })] }),
      'Init:Error',
    ],
    [
      'init exit code',
      pod({ phase: 'Pending', init: [{ name: 'i1' }], initStatuses: [cs('i1', { state: { terminated: { exitCode: 2 } } })] }),
      'Init:ExitCode:2',
    ],
    [
      'init signal',
      pod({ phase: 'Pending', init: [{ name: 'i1' }], initStatuses: [cs('i1', { state: { terminated: { exitCode: 137, signal: 9 } } })] }),
      'Init:Signal:9',
    ],
    [
      'pod initializing',
      pod({
        phase: 'Pending',
        init: [{ name: 'i1' }],
        initStatuses: [cs('i1', { state: { terminated: { exitCode: 0, reason: 'Completed' } } })],
        statuses: [cs('app', { state: { waiting: { reason: 'PodInitializing' } } })],
      }),
      'PodInitializing',
    ],
    [
      'completed container beside a running one, pod not ready',
      pod({
        containers: ['job', 'web'],
        statuses: [cs('job', { state: { terminated: { exitCode: 0, reason: 'Completed' } } }), cs('web', { ready: true, state: running })],
        conditions: [['Ready', 'False']],
      }),
      'NotReady',
    ],
    [
      'completed container beside a running one, pod ready',
      pod({
        containers: ['job', 'web'],
        statuses: [cs('job', { state: { terminated: { exitCode: 0, reason: 'Completed' } } }), cs('web', { ready: true, state: running })],
        conditions: [['Ready', 'True']],
      }),
      'Running',
    ],
    ['terminating', pod({ deleted: true, statuses: [cs('app', { ready: true, state: running })] }), 'Terminating'],
    ['terminated pod being deleted', pod({ deleted: true, phase: 'Succeeded' }), 'Succeeded'],
    ['node lost', pod({ deleted: true, reason: 'NodeLost' }), 'Unknown'],
  ])('%s', (_what, p, want) => {
    expect(podSummary(p, NOW).status).toBe(want);
  });
});

describe('podSummary READY and RESTARTS', () => {
  it('counts ready running containers', () => {
    const p = pod({
      containers: ['a', 'b'],
      statuses: [cs('a', { ready: true, state: running }), cs('b', { ready: false, state: running })],
    });
    expect(podSummary(p, NOW)).toMatchObject({ ready: '1/2', status: 'Running', restarts: '0' });
  });

  it('counts started sidecars and their restarts, not finished init containers', () => {
    const p = pod({
      init: [{ name: 'setup' }, { name: 'proxy', sidecar: true }],
      initStatuses: [
        cs('setup', { restartCount: 4, state: { terminated: { exitCode: 0, reason: 'Completed' } } }),
        cs('proxy', {
          ready: true,
          started: true,
          restartCount: 1,
          state: running,
          lastState: { terminated: { exitCode: 1, finishedAt: ago(10 * M) } },
        }),
      ],
      statuses: [cs('app', { ready: true, restartCount: 2, state: running, lastState: { terminated: { exitCode: 1, finishedAt: ago(5 * M) } } })],
      conditions: [['Initialized', 'True']],
    });
    expect(podSummary(p, NOW)).toMatchObject({ ready: '2/2', status: 'Running', restarts: '3 (5m ago)' });
  });

  it('shows the age of the last restart, and plain counts without a finish time', () => {
    const crash = pod({
      statuses: [
        cs('app', {
          restartCount: 5,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
          lastState: { terminated: { exitCode: 1, finishedAt: ago(90 * S) } },
        }),
      ],
    });
    expect(podSummary(crash, NOW)).toMatchObject({ status: 'CrashLoopBackOff', restarts: '5 (90s ago)', ready: '0/1' });
    const noTime = pod({ statuses: [cs('app', { restartCount: 2, state: running })] });
    expect(podSummary(noTime, NOW).restarts).toBe('2');
  });

  it('accepts string timestamps and missing fields', () => {
    const p: V1Pod = {
      metadata: { name: 'x', creationTimestamp: '2024-05-01T11:00:00Z' as unknown as Date },
      spec: { containers: [{ name: 'c' }] },
    };
    expect(podSummary(p, NOW)).toEqual({
      namespace: 'default',
      name: 'x',
      ready: '0/1',
      status: '',
      restarts: '0',
      age: '60m',
      ip: '<none>',
    });
    expect(podSummary({ metadata: { name: 'y' } }, NOW).age).toBe('<unknown>');
  });
});

describe('formatPodTable', () => {
  it('prints kubectl get pods -A columns, sorted', () => {
    const a = pod({ name: 'web', statuses: [cs('app', { ready: true, state: running })] });
    const b: V1Pod = { ...pod({ name: 'etcd-node1', phase: 'Pending' }), metadata: { name: 'etcd-node1', namespace: 'kube-system', uid: '2' } };
    b.status = { phase: 'Pending' };
    expect(podTableRows([a], NOW)).toEqual([['default', 'web', '1/1', 'Running', '0', '3m10s', '10.88.0.5']]);
    expect(formatPodTable([b, a], NOW)).toBe(
      [
        'NAMESPACE     NAME         READY   STATUS    RESTARTS   AGE         IP',
        'default       web          1/1     Running   0          3m10s       10.88.0.5',
        'kube-system   etcd-node1   0/1     Pending   0          <unknown>   <none>',
      ].join('\n'),
    );
  });
});

describe('tabwrite', () => {
  it('aligns column blocks like Go text/tabwriter', () => {
    expect(tabwrite(['a:\tb', 'ccc:\td', 'x', '  e:\tf', '  gg:\th\ti', '  j:\tkk\tl'])).toBe(
      ['a:    b', 'ccc:  d', 'x', '  e:   f', '  gg:  h   i', '  j:   kk  l'].join('\n'),
    );
  });
});

describe('describeProbe', () => {
  it('formats each probe kind with defaults', () => {
    expect(describeProbe({ httpGet: { path: '/healthz', port: 8080 } })).toBe(
      'http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3',
    );
    expect(describeProbe({ exec: { command: ['cat', '/tmp/ok'] }, periodSeconds: 5, failureThreshold: 1 })).toBe(
      'exec [cat /tmp/ok] delay=0s timeout=1s period=5s #success=1 #failure=1',
    );
    expect(describeProbe({ tcpSocket: { port: 'http' }, initialDelaySeconds: 3 })).toBe(
      'tcp-socket :http delay=3s timeout=1s period=10s #success=1 #failure=3',
    );
    expect(describeProbe({ grpc: { port: 9000 } })).toBe('grpc <pod>:9000 delay=0s timeout=1s period=10s #success=1 #failure=3');
  });
});

describe('qosClass', () => {
  const withResources = (limits?: Record<string, string>, requests?: Record<string, string>): V1Pod => ({
    spec: { containers: [{ name: 'c', resources: { ...(limits ? { limits } : {}), ...(requests ? { requests } : {}) } }] },
  });
  it('classifies like the kubelet', () => {
    expect(qosClass(withResources())).toBe('BestEffort');
    expect(qosClass(withResources(undefined, { cpu: '100m' }))).toBe('Burstable');
    expect(qosClass(withResources({ cpu: '1', memory: '1Gi' }))).toBe('Guaranteed');
    expect(qosClass(withResources({ cpu: '1', memory: '1Gi' }, { cpu: '1000m', memory: '1024Mi' }))).toBe('Guaranteed');
    expect(qosClass(withResources({ cpu: '1', memory: '1Gi' }, { cpu: '500m' }))).toBe('Burstable');
    expect(qosClass(withResources({ cpu: '1' }))).toBe('Burstable');
  });
});

describe('describePod', () => {
  const full: V1Pod = {
    metadata: {
      name: 'web',
      namespace: 'default',
      uid: 'ab12cd34',
      creationTimestamp: ago(H),
      labels: { app: 'web', tier: 'front' },
      annotations: { 'kubernetes.io/config.source': 'file' },
    },
    spec: {
      nodeName: 'node1',
      serviceAccountName: 'default',
      initContainers: [{ name: 'setup', image: 'busybox', command: ['sh', '-c', 'echo hi'] }],
      containers: [
        {
          name: 'app',
          image: 'nginx:1.27',
          ports: [{ containerPort: 80 }],
          env: [
            { name: 'MODE', value: 'prod' },
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          ],
          readinessProbe: { httpGet: { path: '/', port: 80 } },
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', hostPath: { path: '/srv/data', type: 'Directory' } }],
      tolerations: [{ operator: 'Exists' }],
    },
    status: {
      phase: 'Running',
      hostIP: '192.168.1.10',
      podIP: '10.88.0.5',
      podIPs: [{ ip: '10.88.0.5' }],
      startTime: ago(H),
      qosClass: 'BestEffort',
      conditions: [
        { type: 'Initialized', status: 'True' },
        { type: 'Ready', status: 'True' },
      ],
      initContainerStatuses: [
        cs('setup', {
          containerID: 'containerd://1111',
          imageID: 'docker.io/library/busybox@sha256:aaaa',
          state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: ago(H), finishedAt: ago(H - S) } },
        }),
      ],
      containerStatuses: [
        cs('app', {
          containerID: 'containerd://2222',
          image: 'nginx:1.27',
          imageID: 'docker.io/library/nginx@sha256:bbbb',
          ready: true,
          restartCount: 1,
          state: { running: { startedAt: ago(30 * M) } },
          lastState: { terminated: { exitCode: 137, signal: 9, reason: 'OOMKilled', startedAt: ago(H), finishedAt: ago(30 * M + S) } },
        }),
      ],
    },
  };
  const events: CoreV1Event[] = [
    {
      metadata: { name: 'e2' },
      involvedObject: {},
      type: 'Warning',
      reason: 'BackOff',
      message: 'Back-off restarting failed container',
      count: 3,
      firstTimestamp: ago(40 * M),
      lastTimestamp: ago(31 * M),
      source: { component: 'kubelet' },
    },
    {
      metadata: { name: 'e1' },
      involvedObject: {},
      type: 'Normal',
      reason: 'Started',
      message: 'Started container app',
      firstTimestamp: ago(H),
      lastTimestamp: ago(H),
      source: { component: 'kubelet' },
    },
  ];

  it('prints the kubectl describe layout', () => {
    const text = describePod(full, events, { now: NOW, utc: true });
    expect(text).toBe(`Name:             web
Namespace:        default
Service Account:  default
Node:             node1/192.168.1.10
Start Time:       Wed, 01 May 2024 11:00:00 +0000
Labels:           app=web
                  tier=front
Annotations:      kubernetes.io/config.source: file
Status:           Running
IP:               10.88.0.5
IPs:
  IP:  10.88.0.5
Init Containers:
  setup:
    Container ID:  containerd://1111
    Image:         busybox
    Image ID:      docker.io/library/busybox@sha256:aaaa
    Port:          <none>
    Host Port:     <none>
    Command:
      sh
      -c
      echo hi
    State:          Terminated
      Reason:       Completed
      Exit Code:    0
      Started:      Wed, 01 May 2024 11:00:00 +0000
      Finished:     Wed, 01 May 2024 11:00:01 +0000
    Ready:          False
    Restart Count:  0
    Environment:    <none>
    Mounts:         <none>
Containers:
  app:
    Container ID:   containerd://2222
    Image:          nginx:1.27
    Image ID:       docker.io/library/nginx@sha256:bbbb
    Port:           80/TCP
    Host Port:      0/TCP
    State:          Running
      Started:      Wed, 01 May 2024 11:30:00 +0000
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
      Signal:       9
      Started:      Wed, 01 May 2024 11:00:00 +0000
      Finished:     Wed, 01 May 2024 11:29:59 +0000
    Ready:          True
    Restart Count:  1
    Readiness:      http-get http://:80/ delay=0s timeout=1s period=10s #success=1 #failure=3
    Environment:
      MODE:      prod
      POD_NAME:  web (v1:metadata.name)
    Mounts:
      /data from data (rw)
Conditions:
  Type          Status
  Initialized   True
  Ready         True
Volumes:
  data:
    Type:          HostPath (bare host directory volume)
    Path:          /srv/data
    HostPathType:  Directory
QoS Class:         BestEffort
Node-Selectors:    <none>
Tolerations:       op=Exists
Events:
  Type     Reason   Age                From     Message
  ----     ------   ----               ----     -------
  Normal   Started  60m                kubelet  Started container app
  Warning  BackOff  31m (x3 over 40m)  kubelet  Back-off restarting failed container
`);
  });

  it('shows a pending pod without statuses, terminating, and no events', () => {
    const p: V1Pod = {
      metadata: { name: 'gone', namespace: 'ns1', deletionTimestamp: ago(5 * S), deletionGracePeriodSeconds: 30 },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
      status: { phase: 'Running' },
    };
    const text = describePod(p, [], { now: NOW, utc: true });
    expect(text).toContain('Status:                    Terminating (lasts 5s)\nTermination Grace Period:  30s\n');
    expect(text).toContain('Node:                      <none>\n');
    // One alignment block from the container's fields down to Events, as in kubectl.
    expect(text).toContain('  c:\n    Image:        busybox\n    Port:         <none>\n    Host Port:    <none>\n');
    expect(text).toContain('\nVolumes:          <none>\nQoS Class:        BestEffort\n');
    expect(text).not.toContain('State:');
    expect(text).toMatch(/Events:\s+<none>\n$/);
    expect(describePod(p, undefined, { now: NOW })).not.toContain('Events:');
  });
});
