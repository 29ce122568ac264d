/** Pod manifests as the tests write them: YAML, one container `c` running a shell script. */

/** Sleeps until SIGTERM, then exits 0 at once. */
export const SLEEP_FOREVER = "trap 'exit 0' TERM; sleep 1000000 & wait";

/** A one-container pod (container `c`) running `sh -c script`. */
export function podYaml(opts: { name: string; namespace: string; image: string; script: string; terminationGracePeriodSeconds?: number }): string {
  return [
    'apiVersion: v1',
    'kind: Pod',
    'metadata:',
    `  name: ${opts.name}`,
    `  namespace: ${opts.namespace}`,
    'spec:',
    `  terminationGracePeriodSeconds: ${opts.terminationGracePeriodSeconds ?? 2}`,
    '  containers:',
    '    - name: c',
    `      image: ${opts.image}`,
    `      command: ["sh", "-c", ${JSON.stringify(opts.script)}]`,
    '',
  ].join('\n');
}
