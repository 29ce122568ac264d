/**
 * `/metrics/resource`: the kubelet's resource metrics (pkg/kubelet/metrics/collectors/
 * resource_metrics.go) from a Summary, in the Prometheus text format with its names, help texts
 * (stability level included, as the Kubernetes metrics framework prints them), label order and
 * sample timestamps (ms), what metrics-server scrapes.
 */
import type { Summary } from './summary.js';

interface Family {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: string[];
}

function family(name: string, help: string, type: Family['type']): Family {
  return { name, help, type, samples: [] };
}

const escape = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

function labels(pairs: Array<[string, string]>): string {
  return pairs.length === 0 ? '' : `{${pairs.map(([k, v]) => `${k}="${escape(v)}"`).join(',')}}`;
}

/**
 * A float as the Prometheus text format writes it in Go (strconv 'g', shortest): exponent form
 * from 1e+06 up and below 1e-04, the exponent with a sign and at least two digits.
 */
export function goFloat(v: number): string {
  if (v === 0 || !Number.isFinite(v)) return String(v);
  const [mantissa, e] = v.toExponential().split('e') as [string, string];
  const exp = Number(e);
  if (exp < -4 || exp >= 6) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(v);
}

function ms(time: string): string {
  return String(Date.parse(time));
}

/** The text of /metrics/resource for `s`; `scrapeError` when the summary could not be read (then `s` is ignored). */
export function resourceMetricsText(s: Summary | undefined): string {
  const nodeCpu = family('node_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the node in core-seconds', 'counter');
  const nodeMem = family('node_memory_working_set_bytes', '[STABLE] Current working set of the node in bytes', 'gauge');
  const start = family('container_start_time_seconds', '[STABLE] Start time of the container since unix epoch in seconds', 'gauge');
  const cCpu = family('container_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the container in core-seconds', 'counter');
  const cMem = family('container_memory_working_set_bytes', '[STABLE] Current working set of the container in bytes', 'gauge');
  const pCpu = family('pod_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', 'counter');
  const pMem = family('pod_memory_working_set_bytes', '[STABLE] Current working set of the pod in bytes', 'gauge');
  const scrape = family('resource_scrape_error', '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', 'gauge');
  if (s !== undefined) {
    const n = s.node;
    if (n.cpu?.usageCoreNanoSeconds !== undefined) nodeCpu.samples.push(`${goFloat(n.cpu.usageCoreNanoSeconds / 1e9)} ${ms(n.cpu.time)}`);
    if (n.memory?.workingSetBytes !== undefined) nodeMem.samples.push(`${goFloat(n.memory.workingSetBytes)} ${ms(n.memory.time)}`);
    for (const p of s.pods) {
      const pod: Array<[string, string]> = [
        ['namespace', p.podRef.namespace],
        ['pod', p.podRef.name],
      ];
      for (const c of p.containers) {
        const l = labels([['container', c.name], ...pod]);
        const started = Date.parse(c.startTime);
        if (started > 0) start.samples.push(`${l} ${goFloat(started / 1000)}`);
        if (c.cpu?.usageCoreNanoSeconds !== undefined) cCpu.samples.push(`${l} ${goFloat(c.cpu.usageCoreNanoSeconds / 1e9)} ${ms(c.cpu.time)}`);
        if (c.memory?.workingSetBytes !== undefined) cMem.samples.push(`${l} ${goFloat(c.memory.workingSetBytes)} ${ms(c.memory.time)}`);
      }
      if (p.cpu?.usageCoreNanoSeconds !== undefined) pCpu.samples.push(`${labels(pod)} ${goFloat(p.cpu.usageCoreNanoSeconds / 1e9)} ${ms(p.cpu.time)}`);
      if (p.memory?.workingSetBytes !== undefined) pMem.samples.push(`${labels(pod)} ${goFloat(p.memory.workingSetBytes)} ${ms(p.memory.time)}`);
    }
  }
  scrape.samples.push(s === undefined ? '1' : '0');
  // The registry's order: families by name, each family's samples by their labels.
  const families = [nodeCpu, nodeMem, start, cCpu, cMem, pCpu, pMem, scrape].sort((a, b) => a.name.localeCompare(b.name));
  const out: string[] = [];
  for (const f of families) {
    if (f.samples.length === 0) continue;
    out.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`);
    for (const sample of [...f.samples].sort()) out.push(sample.startsWith('{') ? `${f.name}${sample}` : `${f.name} ${sample}`);
  }
  return out.join('\n') + '\n';
}
