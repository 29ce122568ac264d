/**
 * fsGroup ownership, as the kubelet's SetVolumeOwnership
 * (pkg/volume/volume_linux.go): every file and directory under the volume
 * gets group `fsGroup`, files gain group read (and write unless the volume
 * is read-only), directories gain group rwx/r-x plus setgid so new files
 * inherit the group. Symlinks get the group but no mode change.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

async function change(p: string, fsGroup: number, readOnly: boolean): Promise<void> {
  const st = await fsp.lstat(p);
  await fsp.lchown(p, st.uid, fsGroup);
  if (st.isSymbolicLink()) return;
  let mask = readOnly ? RO_MASK : RW_MASK;
  if (st.isDirectory()) mask |= SETGID | EXEC_MASK;
  const mode = (st.mode & 0o7777) | mask;
  if (mode !== (st.mode & 0o7777)) await fsp.chmod(p, mode);
}

export async function setVolumeOwnership(dir: string, fsGroup: number | undefined, readOnly: boolean): Promise<void> {
  if (fsGroup === undefined) return;
  const walk = async (p: string): Promise<void> => {
    await change(p, fsGroup, readOnly);
    const st = await fsp.lstat(p);
    if (!st.isDirectory()) return;
    for (const name of await fsp.readdir(p)) await walk(path.join(p, name));
  };
  await walk(dir);
}
