/**
 * A joined node's private view of /etc/kubernetes and /var/lib/kubelet: a persistent mount namespace
 * (bound onto `<rootDir>/ns/mnt` with `unshare --mount=FILE`) in which `<rootDir>/etc/kubernetes` and
 * `<rootDir>/var/lib/kubelet` are bind-mounted over those paths. kubeadm and the kubelet run in it
 * (`nsenter --mount=FILE`), so every path kubeadm hardcodes and every path in the files it writes
 * (kubelet.conf, config.yaml's clientCAFile and staticPodPath) resolves to the node's own copy,
 * while the host's /var/lib/kubelet (the conformance kubelets' root) is untouched.
 *
 * Propagation: the kubelet's --root-dir is the host path `<rootDir>/var/lib/kubelet`, made a shared
 * mount on the host before the namespace exists, so the namespace's copy is its peer and what the
 * kubelet mounts there (tmpfs for secret volumes) is seen by containerd, which runs on the host. The
 * namespace makes the mounts containing its two targets private before binding over them, so nothing
 * it binds reaches the host. No upstream counterpart (upstream runs kubeadm on a whole machine).
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { run } from '../exec.ts';
import type { NodePaths } from './paths.ts';
import { NODE_BOUND_DIRS } from './paths.ts';

/** The mount points in /proc/self/mountinfo (field 5, octal escapes decoded). */
export function mountPointsOf(mountinfo: string): string[] {
  const out: string[] = [];
  for (const line of mountinfo.split('\n')) {
    const field = line.split(' ')[4];
    if (field === undefined) continue;
    out.push(
      field.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8))),
    );
  }
  return out;
}

async function mountPoints(): Promise<string[]> {
  return mountPointsOf(await readFile('/proc/self/mountinfo', 'utf8'));
}

export function nsFileOf(paths: NodePaths): string {
  return join(paths.rootDir, 'ns', 'mnt');
}

/** Run inside the new namespace (`sh -ec SCRIPT sh ROOT DIR...`): private parents, then the binds. */
const NAMESPACE_SCRIPT = `root="$1"; shift
for t in "$@"; do
  parent=$(findmnt -n -o TARGET --target "$t")
  mount --make-private "$parent"
  mount --bind "$root$t" "$t"
done`;

/**
 * Makes (or reuses) the node's namespace; resolves with the file to `nsenter --mount=` into. Creates
 * the host's /etc/kubernetes (empty) when missing: a bind needs an existing mount point.
 */
export async function ensureNodeNamespace(paths: NodePaths, logger: Logger): Promise<string> {
  const nsDir = join(paths.rootDir, 'ns');
  const nsFile = nsFileOf(paths);
  for (const d of [paths.kubernetesDir, paths.kubeletDir, nsDir]) await mkdir(d, { recursive: true });
  for (const target of NODE_BOUND_DIRS) await mkdir(target, { recursive: true });
  let mounted = await mountPoints();
  if (mounted.includes(nsFile)) {
    logger.debug('reusing the node mount namespace', { nsFile });
    return nsFile;
  }
  if (!mounted.includes(paths.kubeletDir)) {
    await run('mount', ['--bind', paths.kubeletDir, paths.kubeletDir]);
    await run('mount', ['--make-shared', paths.kubeletDir]);
  }
  // `unshare --mount=FILE` bind-mounts the namespace onto FILE, which must not sit on a shared mount.
  if (!mounted.includes(nsDir)) {
    await run('mount', ['--bind', nsDir, nsDir]);
    await run('mount', ['--make-private', nsDir]);
  }
  await writeFile(nsFile, '');
  await run('unshare', [
    `--mount=${nsFile}`,
    '--propagation',
    'unchanged',
    '--',
    'sh',
    '-ec',
    NAMESPACE_SCRIPT,
    'sh',
    paths.rootDir,
    ...NODE_BOUND_DIRS,
  ]);
  mounted = await mountPoints();
  if (!mounted.includes(nsFile)) {
    throw new KubeletError(
      'Internal',
      'make the node mount namespace',
      `${nsFile} is not bound after unshare`,
    );
  }
  logger.info('made the node mount namespace', { nsFile, bound: NODE_BOUND_DIRS, from: paths.rootDir });
  return nsFile;
}

/** argv prefix that runs a command inside the node's namespace. */
export function inNamespace(nsFile: string, argv: readonly string[]): string[] {
  return ['nsenter', `--mount=${nsFile}`, '--', ...argv];
}

/**
 * Undoes ensureNodeNamespace and removes the node's directory: the namespace (once no process is in
 * it), what the kubelet left mounted under its root dir (deepest first), the two bind mounts. The
 * kubelet must be stopped first.
 */
export async function removeNodeNamespace(paths: NodePaths, logger: Logger): Promise<void> {
  const ours = (m: string) => m === paths.rootDir || m.startsWith(`${paths.rootDir}/`);
  // Stacked mounts (a self-bind under a tmpfs) need one pass per layer.
  for (let pass = 0; pass < 5; pass++) {
    const under = [...new Set((await mountPoints()).filter(ours))].sort((a, b) => b.length - a.length);
    if (under.length === 0) break;
    for (const m of under) {
      try {
        await run('umount', ['-l', m]);
      } catch (err) {
        // Gone already through propagation from an unmount above it; the next pass sees what is left.
        logger.debug('unmount under the node root failed', { mount: m, err: describeError(err) });
      }
    }
  }
  const left = (await mountPoints()).filter(ours);
  if (left.length > 0) {
    throw new KubeletError(
      'Internal',
      `remove node root ${paths.rootDir}`,
      `still mounted: ${left.join(', ')}`,
    );
  }
  await rm(paths.rootDir, { recursive: true, force: true });
}
