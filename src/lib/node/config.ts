/**
 * Parsing and validation of what a node registers with: its name, extra
 * labels, registration taints and resource reservations, with the kubelet's
 * rules (cmd/kubelet/app/options, pkg/util/taints). Errors name the input
 * (the label key, the taint text); the command layer adds the flag name.
 */
import { InputError } from '../errors.js';
import { isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from '../pod/names.js';
import { parseQuantity } from '../pod/quantity.js';

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
export const TAINT_EFFECTS: readonly TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
}

/** Reservations in base units: cpu in millicores, memory and ephemeral-storage in bytes, pid a count. */
export interface Reservation {
  cpuMilli: number;
  memoryBytes: number;
  ephemeralStorageBytes: number;
  pid: number;
}

export const NO_RESERVATION: Reservation = { cpuMilli: 0, memoryBytes: 0, ephemeralStorageBytes: 0, pid: 0 };

/** A Node name must be a DNS subdomain (validation.ValidateNodeName). */
export function validateNodeName(name: string): void {
  const errs = isDNS1123Subdomain(name);
  if (errs.length > 0) throw new InputError(`node name "${name}": ${errs.join('; ')}`);
}

/**
 * Labels in the kubernetes.io and k8s.io namespaces that a kubelet may set on
 * its own Node (kubeletapis.KubeletLabels, KubeletLabelNamespaces); the Node
 * authorizer's NodeRestriction refuses any other, so the kubelet refuses them
 * at start-up.
 */
const KUBELET_LABELS = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'beta.kubernetes.io/instance-type',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
]);
const KUBELET_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

function isKubeletLabel(key: string): boolean {
  if (KUBELET_LABELS.has(key)) return true;
  const slash = key.indexOf('/');
  if (slash < 0) return true;
  const ns = key.slice(0, slash);
  if (KUBELET_LABEL_NAMESPACES.some((n) => ns === n || ns.endsWith('.' + n))) return true;
  const restricted = ns === 'kubernetes.io' || ns.endsWith('.kubernetes.io') || ns === 'k8s.io' || ns.endsWith('.k8s.io');
  return !restricted;
}

/** `k=v,k2=v2` → labels; each key a qualified name, each value a label value. */
export function parseNodeLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (text.trim() === '') return labels;
  for (const item of text.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) throw new InputError(`label "${item}": not key=value`);
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    const keyErrs = isQualifiedName(key);
    if (keyErrs.length > 0) throw new InputError(`label key "${key}": ${keyErrs.join('; ')}`);
    const valueErrs = isValidLabelValue(value);
    if (valueErrs.length > 0) throw new InputError(`label "${key}" value "${value}": ${valueErrs.join('; ')}`);
    if (!isKubeletLabel(key)) {
      throw new InputError(
        `label "${key}": a node may not set labels in the kubernetes.io or k8s.io namespaces other than ${[...KUBELET_LABELS].join(', ')} and the kubelet.kubernetes.io/ and node.kubernetes.io/ prefixes (NodeRestriction)`,
      );
    }
    labels[key] = value;
  }
  return labels;
}

/** `key=value:Effect,key:Effect` (pkg/util/taints ParseTaints). */
export function parseTaints(text: string): Taint[] {
  const taints: Taint[] = [];
  if (text.trim() === '') return taints;
  const seen = new Set<string>();
  for (const spec of text.split(',')) {
    const colon = spec.lastIndexOf(':');
    if (colon < 0) throw new InputError(`taint "${spec}": not key=value:Effect or key:Effect`);
    const kv = spec.slice(0, colon);
    const effect = spec.slice(colon + 1);
    if (!(TAINT_EFFECTS as readonly string[]).includes(effect)) {
      throw new InputError(`taint "${spec}": effect "${effect}" is not one of ${TAINT_EFFECTS.join(', ')}`);
    }
    const eq = kv.indexOf('=');
    const key = eq < 0 ? kv : kv.slice(0, eq);
    const value = eq < 0 ? undefined : kv.slice(eq + 1);
    const keyErrs = isQualifiedName(key);
    if (keyErrs.length > 0) throw new InputError(`taint "${spec}": key "${key}": ${keyErrs.join('; ')}`);
    if (value !== undefined) {
      const valueErrs = isValidLabelValue(value);
      if (valueErrs.length > 0) throw new InputError(`taint "${spec}": value "${value}": ${valueErrs.join('; ')}`);
    }
    const id = `${key}:${effect}`;
    if (seen.has(id)) throw new InputError(`taint "${spec}": duplicate key and effect ${id}`);
    seen.add(id);
    taints.push(value === undefined ? { key, effect: effect as TaintEffect } : { key, value, effect: effect as TaintEffect });
  }
  return taints;
}

/** `cpu=100m,memory=1Gi,ephemeral-storage=1Gi,pid=1000` (--kube-reserved / --system-reserved). */
export function parseReservation(text: string): Reservation {
  const r: Reservation = { ...NO_RESERVATION };
  if (text.trim() === '') return r;
  for (const item of text.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) throw new InputError(`reservation "${item}": not resource=quantity`);
    const name = item.slice(0, eq).trim();
    const raw = item.slice(eq + 1).trim();
    let q;
    try {
      q = parseQuantity(raw);
    } catch (err) {
      throw new InputError(`reservation "${item}": ${(err as Error).message}`);
    }
    if (q.sign() < 0) throw new InputError(`reservation "${item}": must not be negative`);
    switch (name) {
      case 'cpu':
        r.cpuMilli = q.milliValue();
        break;
      case 'memory':
        r.memoryBytes = q.value();
        break;
      case 'ephemeral-storage':
        r.ephemeralStorageBytes = q.value();
        break;
      case 'pid':
        r.pid = q.value();
        break;
      default:
        throw new InputError(`reservation "${item}": resource "${name}" is not one of cpu, memory, ephemeral-storage, pid`);
    }
  }
  return r;
}

export function addReservations(a: Reservation, b: Reservation): Reservation {
  return {
    cpuMilli: a.cpuMilli + b.cpuMilli,
    memoryBytes: a.memoryBytes + b.memoryBytes,
    ephemeralStorageBytes: a.ephemeralStorageBytes + b.ephemeralStorageBytes,
    pid: a.pid + b.pid,
  };
}

/** An IPv4 or IPv6 address (--node-ip). */
export function validateNodeIP(ip: string): void {
  const v4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
  const v6 = /^[0-9a-fA-F:]+$/;
  if (!v4.test(ip) && !(ip.includes(':') && v6.test(ip))) throw new InputError(`node IP "${ip}": not an IP address`);
  if (ip === '0.0.0.0' || ip === '::') throw new InputError(`node IP "${ip}": unspecified address`);
}
