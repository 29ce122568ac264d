/**
 * The images the node conformance specs run, built on this machine (nothing
 * is pulled from the internet) under their exact registry.k8s.io names, as
 * ../shared/conformance-notes.md measured them:
 *  - busybox: the host's busybox-static with an applet link per applet, the
 *    upstream image's passwd/group, and /bin/sh = bash (busybox ash drops
 *    environment variables whose names are not shell identifiers, which four
 *    Conformance specs set; bash keeps them);
 *  - agnhost and nonewprivs: the static binaries scripts/build-conformance.sh
 *    builds from the module's test/images sources, laid out as their
 *    Dockerfiles do; agnhost also has curl and netcat-openbsd's nc (the UDP
 *    networking specs run `nc -u`, which busybox's nc lacks);
 *  - pause: the module's build/pause/linux/pause.c, static, USER 65535;
 *  - nonroot: busybox with USER 1234;
 *  - nginx and httpd: stand-ins, busybox httpd behind the upstream commands.
 * The OCI archives are cached in the build cache dir by content (the spec
 * digest), so a rebuild happens only when an input changes.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  buildOciImage,
  busyboxApplets,
  findHostBusybox,
  imageSpecDigest,
  sharedLibraries,
  type ImageSpec,
  type LayerEntry,
} from '../../src/lib/runtime/oci-image.js';

const execFileP = promisify(execFile);
const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const PASSWD = [
  'root:x:0:0:root:/root:/bin/sh',
  'daemon:x:1:1:daemon:/usr/sbin:/bin/false',
  'bin:x:2:2:bin:/bin:/bin/false',
  'sys:x:3:3:sys:/dev:/bin/false',
  'sync:x:4:100:sync:/bin:/bin/sync',
  'mail:x:8:8:mail:/var/spool/mail:/bin/false',
  'www-data:x:33:33:www-data:/var/www:/bin/false',
  'operator:x:37:37:Operator:/var:/bin/false',
  'nobody:x:65534:65534:nobody:/home:/bin/false',
];
const GROUP = [
  'root:x:0:', 'daemon:x:1:', 'bin:x:2:', 'sys:x:3:', 'adm:x:4:', 'tty:x:5:', 'disk:x:6:', 'lp:x:7:', 'mail:x:8:',
  'kmem:x:9:', 'wheel:x:10:root', 'cdrom:x:11:', 'dialout:x:18:', 'floppy:x:19:', 'video:x:28:', 'audio:x:29:',
  'tape:x:32:', 'www-data:x:33:', 'operator:x:37:', 'utmp:x:43:', 'plugdev:x:46:', 'staff:x:50:', 'lock:x:54:',
  'netdev:x:82:', 'users:x:100:', 'nogroup:x:65534:',
];

export interface ConformanceImage {
  /** registry.k8s.io/REPO:TAG */
  name: string;
  spec: ImageSpec;
}

/** A host binary and its shared libraries at their host paths. */
async function hostFiles(binary: string, at: string): Promise<LayerEntry[]> {
  const libs = await sharedLibraries(binary);
  return [
    { path: at, mode: 0o755, content: { fromFile: binary } },
    ...libs.map((lib): LayerEntry => ({ path: lib, mode: 0o755, content: { fromFile: lib } })),
  ];
}

/** Merge layer entries; a later entry for the same path wins (bash's /bin/sh over busybox's). */
function merge(...lists: LayerEntry[][]): LayerEntry[] {
  const byPath = new Map<string, LayerEntry>();
  for (const e of lists.flat()) byPath.set(path.posix.normalize(`/${e.path}`), e);
  return [...byPath.values()];
}

interface BaseFiles {
  files: LayerEntry[];
  passwd: string[];
  group: string[];
}

async function busyboxBase(): Promise<BaseFiles> {
  const busybox = await findHostBusybox();
  const applets = await busyboxApplets(busybox);
  const bash = await hostFiles('/bin/bash', 'bin/bash');
  return {
    files: merge(
      [{ path: 'bin/busybox', mode: 0o755, content: { fromFile: busybox } }],
      applets.map((a): LayerEntry => ({ path: `bin/${a}`, symlink: 'busybox' })),
      bash,
      [
        { path: 'bin/sh', symlink: 'bash' },
        { path: 'tmp', dir: true, mode: 0o1777 },
        { path: 'root', dir: true, mode: 0o700 },
        { path: 'home', dir: true },
        { path: 'var/www', dir: true },
        { path: 'etc/hostname', content: Buffer.from('') },
        { path: 'etc/hosts', content: Buffer.from('127.0.0.1 localhost\n') },
        { path: 'etc/resolv.conf', content: Buffer.from('') },
      ],
    ),
    passwd: PASSWD,
    group: GROUP,
  };
}

function withAccounts(base: BaseFiles, extra: LayerEntry[] = [], passwd: string[] = [], group: string[] = []): LayerEntry[] {
  return merge(base.files, extra, [
    { path: 'etc/passwd', content: Buffer.from([...base.passwd, ...passwd].join('\n') + '\n') },
    { path: 'etc/group', content: Buffer.from([...base.group, ...group].join('\n') + '\n') },
  ]);
}

/**
 * The tags of `repo` that e2e.test names (its --list-images), else
 * `fallback`: each release moves its test images on (v1.34.4: busybox
 * 1.37.0-1, agnhost 2.56; v1.37.2: 1.37.0-2 and 1.36.1-1, 2.66.1 and 2.55),
 * and the stand-ins are built under whatever names the suite asks for.
 */
export function listedTags(listed: readonly string[] | undefined, repo: string, fallback: readonly string[]): string[] {
  const tags = (listed ?? []).filter((n) => n.startsWith(`${repo}:`)).map((n) => n.slice(repo.length + 1));
  return tags.length > 0 ? [...new Set(tags)] : [...fallback];
}

/** The sandbox image the conformance runtimes use: the newest pause tag e2e.test names. */
export function conformancePauseImage(listed: readonly string[] | undefined): string {
  const tags = listedTags(listed, 'registry.k8s.io/pause', ['3.10.1']);
  return `registry.k8s.io/pause:${tags.sort((a, b) => b.localeCompare(a, undefined, { numeric: true }))[0]}`;
}

/**
 * Every image the spec set pulls, from the binaries in `binDir`
 * (scripts/build-conformance.sh) and the module source `k8sSrc`, under the
 * names `listed` (e2e.test --list-images) gives them.
 */
export async function conformanceImages(binDir: string, k8sSrc: string, listed?: readonly string[]): Promise<ConformanceImage[]> {
  const tags = (repo: string, fallback: string[]) => listedTags(listed, `registry.k8s.io/${repo}`, fallback);
  const base = await busyboxBase();
  const busybox = withAccounts(base);
  const bin = (n: string) => path.join(binDir, n);
  const images: ConformanceImage[] = [];
  const add = (name: string, files: LayerEntry[], config: ImageSpec['config']) =>
    images.push({ name, spec: { name, files, config: { env: [PATH_ENV], workingDir: '/', ...config } } });

  for (const tag of tags('e2e-test-images/busybox', ['1.37.0-1'])) add(`registry.k8s.io/e2e-test-images/busybox:${tag}`, busybox, { cmd: ['sh'] });
  for (const tag of new Set([...tags('pause', ['3.10.1']), '3.10.1', '3.10'])) {
    add(`registry.k8s.io/pause:${tag}`, [{ path: 'pause', mode: 0o755, content: { fromFile: bin('pause') } }], { entrypoint: ['/pause'], user: '65535:65535' });
  }
  const curl = merge(await hostFiles('/usr/bin/curl', 'usr/bin/curl'), await hostFiles(bin('nc-openbsd'), 'usr/bin/nc'));
  const porter = path.join(k8sSrc, 'test', 'images', 'agnhost', 'porter');
  const agnhost = withAccounts(
      base,
      merge(curl, [
        { path: 'agnhost', mode: 0o755, content: { fromFile: bin('agnhost') } },
        { path: 'agnhost-2', symlink: 'agnhost' },
        { path: 'localhost.crt', content: { fromFile: path.join(porter, 'localhost.crt') } },
        { path: 'localhost.key', content: { fromFile: path.join(porter, 'localhost.key') } },
        { path: 'uploads', dir: true },
        { path: 'home/user-defined-in-image', dir: true, uid: 1000, gid: 1000 },
      ]),
      ['user-defined-in-image:x:1000:1000:Linux User,,,:/home/user-defined-in-image:/bin/sh'],
      ['user-defined-in-image:x:1000:', 'group-defined-in-image:x:50000:user-defined-in-image'],
    );
  for (const tag of tags('e2e-test-images/agnhost', ['2.56'])) add(`registry.k8s.io/e2e-test-images/agnhost:${tag}`, agnhost, { entrypoint: ['/agnhost'], cmd: ['pause'] });
  for (const tag of tags('e2e-test-images/nonewprivs', ['1.3'])) {
    add(`registry.k8s.io/e2e-test-images/nonewprivs:${tag}`, merge(busybox, [{ path: 'usr/local/bin/nnp', mode: 0o6755, content: { fromFile: bin('nonewprivs') } }]), { cmd: ['nnp'] });
  }
  for (const tag of tags('e2e-test-images/nonroot', ['1.4'])) add(`registry.k8s.io/e2e-test-images/nonroot:${tag}`, busybox, { cmd: ['sh'], user: '1234' });
  const serve = (dir: string) => `#!/bin/sh\n# A stand-in: busybox httpd serving ${dir} on port 80 in the foreground.\nexec busybox httpd -f -p 80 -h ${dir}\n`;
  for (const tag of tags('e2e-test-images/nginx', ['1.14-4', '1.15-4'])) {
    add(
      `registry.k8s.io/e2e-test-images/nginx:${tag}`,
      merge(busybox, [
        { path: 'usr/sbin/nginx', mode: 0o755, content: Buffer.from(serve('/usr/share/nginx/html')) },
        { path: 'usr/share/nginx/html/index.html', content: Buffer.from('<h1>Welcome to nginx!</h1>\n') },
      ]),
      { cmd: ['nginx', '-g', 'daemon off;'] },
    );
  }
  for (const tag of listed === undefined || listed.some((n) => n.includes('/httpd:')) ? tags('e2e-test-images/httpd', ['2.4.38-4', '2.4.39-4']) : []) {
    add(
      `registry.k8s.io/e2e-test-images/httpd:${tag}`,
      merge(busybox, [
        { path: 'usr/local/bin/httpd-foreground', mode: 0o755, content: Buffer.from(serve('/usr/local/apache2/htdocs')) },
        { path: 'usr/local/apache2/htdocs/index.html', content: Buffer.from('<html><body><h1>It works!</h1></body></html>\n') },
      ]),
      { cmd: ['httpd-foreground'], workingDir: '/usr/local/apache2' },
    );
  }
  return images;
}

/** Build (or find cached) the OCI archive of each image under `cacheDir`; returns name → archive. */
export async function buildImages(images: ConformanceImage[], cacheDir: string, log: (s: string) => void): Promise<Map<string, string>> {
  await fs.mkdir(cacheDir, { recursive: true });
  const out = new Map<string, string>();
  for (const img of images) {
    const digest = await imageSpecDigest(img.spec);
    const file = path.join(cacheDir, `${img.name.replace(/[^\w.-]+/g, '_')}-${digest.replace(/^sha256:/, '').slice(0, 16)}.tar`);
    const cached = await fs.stat(file).then(() => true, () => false);
    if (!cached) {
      log(`building image ${img.name}`);
      await buildOciImage({ ...img.spec, outFile: file });
    }
    out.set(img.name, file);
  }
  return out;
}

/**
 * Push each archive to the registry at `registry` (host:port) under its
 * path without the registry.k8s.io host: containerd's mirror for
 * registry.k8s.io asks the mirror for the same repository path.
 */
export async function pushImages(crane: string, registry: string, archives: Map<string, string>, workDir: string): Promise<void> {
  for (const [name, archive] of archives) {
    const layout = path.join(workDir, path.basename(archive, '.tar'));
    await fs.mkdir(layout, { recursive: true });
    await execFileP('tar', ['-xf', archive, '-C', layout]);
    const target = `${registry}/${name.replace(/^registry\.k8s\.io\//, '')}`;
    await execFileP(crane, ['push', '--insecure', layout, target], { maxBuffer: 1 << 20 });
    await fs.rm(layout, { recursive: true, force: true });
  }
}
