import { Args, Flags } from '@oclif/core';
import { PodCommand, outputFlags } from '../base-command.js';
import { durationFlag } from '../flags.js';

export default class Probe extends PodCommand<typeof Probe> {
  static override summary = "Run a pod's liveness, readiness or startup probes once, now, and show the result.";
  static override description = `Runs the pod's configured probes (exec through CRI ExecSync in the container; httpGet, tcpSocket and grpc against the pod's IP, or httpGet.host when set) the way the kubelet's prober does, and prints each result, its duration and the handler's detail: status code and body excerpt, exit code and output, or the connect error. Nothing is recorded and nothing is restarted; it works with or without a running klet sync.

Ad-hoc probes instead of the configured ones: --exec 'CMD' (sh -c in the container), --http [SCHEME://]PORT/PATH, --tcp PORT, --grpc PORT[/SERVICE], against the pod's network (-c names the container when the pod has several). --watch repeats each probe at its periodSeconds (an ad-hoc probe every second) until Ctrl-C.

Exit status: 0 when every probe passed (a redirect to another host passes with a warning, as on the kubelet), 1 when one failed, 2 when one could not be run (no such pod or container, container not running, no such probe, a named port the container does not declare).`;
  static override examples = [
    '<%= config.bin %> <%= command.id %> kube-system/etcd-node1',
    '<%= config.bin %> <%= command.id %> kube-system/kube-apiserver-node1 --type readiness -o json',
    '<%= config.bin %> <%= command.id %> web-node1 -c app --http 8080/healthz',
    "<%= config.bin %> <%= command.id %> web-node1 --exec 'test -f /tmp/ready' --watch",
    '<%= config.bin %> <%= command.id %> etcd-node1 --tcp 2379',
    '<%= config.bin %> <%= command.id %> app-node1 --grpc 9090/my.Service',
  ];
  static override args = { pod: Args.string({ description: 'Pod: ns/name, name, or a UID prefix', required: true }) };
  static override flags = {
    ...outputFlags,
    container: Flags.string({ char: 'c', summary: 'Only this container.' }),
    type: Flags.option({ summary: 'Which configured probes.', options: ['startup', 'liveness', 'readiness', 'all'] as const, default: 'all' as const })(),
    exec: Flags.string({ summary: "Ad-hoc: run 'CMD' with sh -c in the container; exit 0 passes.", exclusive: ['http', 'tcp', 'grpc'] }),
    http: Flags.string({ summary: 'Ad-hoc: GET [SCHEME://]PORT/PATH on the pod IP; 200-399 passes.', exclusive: ['exec', 'tcp', 'grpc'] }),
    tcp: Flags.string({ summary: 'Ad-hoc: open a TCP connection to PORT on the pod IP.', exclusive: ['exec', 'http', 'grpc'] }),
    grpc: Flags.string({ summary: 'Ad-hoc: grpc.health.v1 Check on PORT[/SERVICE] of the pod IP; SERVING passes.', exclusive: ['exec', 'http', 'tcp'] }),
    timeout: durationFlag({ summary: "An ad-hoc probe's timeout, whole seconds (the kubelet's default 1s).", default: '1s' }),
    watch: Flags.boolean({ char: 'w', summary: 'Repeat at each probe period until Ctrl-C.', default: false }),
  };

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Probe);
    const svc = await import('../lib/services/probe.js');
    const { formatTable } = await import('../lib/util/table.js');
    let printedHeader = false;
    // --watch streams: one JSON object per line, or one table row per run under one header.
    const onResult = (r: import('../lib/services/probe.js').ProbeRunReport) => {
      if (this.output === 'json') return void process.stdout.write(JSON.stringify(r) + '\n');
      const lines = formatTable(svc.PROBE_REPORT_HEADERS, [svc.probeReportRow(r)]).split('\n');
      process.stdout.write((printedHeader ? lines.slice(1) : lines).join('\n') + '\n');
      printedHeader = true;
    };
    const res = await svc.probe(
      { pod: args.pod, container: flags.container, type: flags.type, adHoc: svc.parseAdHoc(flags), timeoutMs: flags.timeout, watch: flags.watch },
      { ...(await this.deps()), onResult: flags.watch ? onResult : undefined },
    );
    if (!flags.watch) await this.printObject(res, () => formatTable(svc.PROBE_REPORT_HEADERS, res.results.map(svc.probeReportRow)));
    if (res.exitCode !== 0) this.exit(res.exitCode);
  }
}
