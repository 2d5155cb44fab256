/**
 * What the node conformance specs expect of the host beyond the kubelet. The "Mount propagation"
 * spec mounts hostPaths under /var/lib/kubelet with Bidirectional propagation, which containerd
 * refuses unless the path sits on a shared mount ("… is mounted on / but it is not a shared
 * mount"). A systemd host's `/` is shared; this VM's is private. So the harness makes
 * /var/lib/kubelet a shared mount of its own (a bind mount onto itself, then rshared), once; it
 * stays until reboot and changes nothing else on the host.
 */
import { mkdir, readFile } from 'node:fs/promises';
import type { Logger } from '../../../src/util/logger.ts';
import { run } from '../exec.ts';

export const SHARED_KUBELET_DIR = '/var/lib/kubelet';

/**
 * The propagation of the mount whose mount point is exactly `dir`, from a mountinfo text
 * (proc(5): the optional fields between the mount options and "-" hold `shared:N`); undefined when
 * `dir` is not a mount point.
 */
export function mountPropagation(mountinfo: string, dir: string): 'shared' | 'private' | undefined {
  let found: 'shared' | 'private' | undefined;
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    if (fields[4] !== dir) continue;
    const optional = fields.slice(6, fields.indexOf('-'));
    // The last mount on a mount point is the one that counts.
    found = optional.some((f) => f.startsWith('shared:')) ? 'shared' : 'private';
  }
  return found;
}

export async function ensureSharedMount(dir: string, logger: Logger): Promise<void> {
  await mkdir(dir, { recursive: true });
  const state = mountPropagation(await readFile('/proc/self/mountinfo', 'utf8'), dir);
  if (state === 'shared') return;
  if (state === undefined) await run('mount', ['--bind', dir, dir]);
  await run('mount', ['--make-rshared', dir]);
  logger.info('made a shared mount for the mount propagation specs', { dir });
}
