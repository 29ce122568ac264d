/**
 * Service environment variables, as the kubelet gives them to every
 * container (kubelet_pods.go getServiceEnvVarMap, pkg/kubelet/envvars): for
 * each Service with a cluster IP in the pod's namespace (when
 * spec.enableServiceLinks, the default) and the master service `kubernetes`
 * of the default namespace (always), NAME_SERVICE_HOST, NAME_SERVICE_PORT,
 * NAME_SERVICE_PORT_<PORTNAME> and the Docker link variables NAME_PORT,
 * NAME_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}. Pure.
 */
import type { V1Service } from '@kubernetes/client-node';

/** Services whose variables every pod gets, from the default namespace (the kubelet's masterServices). */
const MASTER_SERVICES = new Set(['kubernetes']);

/** Is the service's cluster IP set (not None, not empty: v1helper.IsServiceIPSet)? */
function serviceIPSet(s: V1Service): boolean {
  const ip = s.spec?.clusterIP ?? '';
  return ip !== '' && ip !== 'None';
}

/** A service or port name as a variable name: upper case, - as _ (makeEnvVariableName). */
function envName(s: string): string {
  return s.replaceAll('-', '_').toUpperCase();
}

/** host:port, with an IPv6 host in brackets (net.JoinHostPort). */
function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The variables of these services, in the kubelet's order for each (envvars.FromServices). */
export function fromServices(services: readonly V1Service[]): Array<{ name: string; value: string }> {
  const out: Array<{ name: string; value: string }> = [];
  for (const s of services) {
    if (!serviceIPSet(s)) continue;
    const ip = s.spec?.clusterIP ?? '';
    const ports = s.spec?.ports ?? [];
    const prefix = envName(s.metadata?.name ?? '');
    out.push({ name: `${prefix}_SERVICE_HOST`, value: ip });
    const portVar = `${prefix}_SERVICE_PORT`;
    out.push({ name: portVar, value: String(ports[0]?.port ?? 0) });
    for (const p of ports) if (p.name) out.push({ name: `${portVar}_${envName(p.name)}`, value: String(p.port) });
    ports.forEach((p, i) => {
      const proto = p.protocol || 'TCP';
      const url = `${proto.toLowerCase()}://${joinHostPort(ip, p.port)}`;
      if (i === 0) out.push({ name: `${prefix}_PORT`, value: url });
      const pp = `${prefix}_PORT_${p.port}_${proto.toUpperCase()}`;
      out.push(
        { name: pp, value: url },
        { name: `${pp}_PROTO`, value: proto.toLowerCase() },
        { name: `${pp}_PORT`, value: String(p.port) },
        { name: `${pp}_ADDR`, value: ip },
      );
    });
  }
  return out;
}

/**
 * The service variables of a pod in `namespace` (getServiceEnvVarMap): the
 * master services of the default namespace always, the namespace's own
 * services when enableServiceLinks; services without a cluster IP never.
 * Services are taken by name order, so the result does not depend on the
 * order a watch delivered them in.
 */
export function serviceEnvVars(services: readonly V1Service[], namespace: string, enableServiceLinks: boolean): Map<string, string> {
  const chosen = new Map<string, V1Service>();
  for (const s of services) {
    if (!serviceIPSet(s)) continue;
    const name = s.metadata?.name ?? '';
    const ns = s.metadata?.namespace ?? 'default';
    if (ns === 'default' && MASTER_SERVICES.has(name)) {
      if (!chosen.has(name)) chosen.set(name, s);
    } else if (ns === namespace && enableServiceLinks) {
      chosen.set(name, s);
    }
  }
  const ordered = [...chosen.keys()].sort().map((k) => chosen.get(k)!);
  return new Map(fromServices(ordered).map((e) => [e.name, e.value]));
}
