/**
 * Access to the test bed for every suite that runs on it (integration, reliability, bench): the bed's
 * containerd started clean with temporary directories for a kubelet (`setupEnv`), static pod
 * manifests written the way editors do, the bed's pods by UID, the test logger. No upstream
 * counterpart (the e2e_node suite's framework plays this part).
 */
import { mkdtemp, readFile, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startContainerd, removeAllPods, type ContainerdBed } from '../harness/index.ts';
import { createCriClient, type CriClient } from '../../src/runtime/cri/index.ts';
import { createLogger, nullLogger, type Logger } from '../../src/util/logger.ts';
import type { Pod } from '../../src/api/types.ts';
import { buildManifest } from './pod.ts';
import { LABEL_POD_UID } from '../../src/config/defaults.ts';
import type { Container as CriContainer, PodSandbox } from '../../src/runtime/cri/types.ts';

export const IMAGE = 'docker.io/library/busybox:1.29';
export const NODE = 'itest';

export function testLogger(): Logger {
  return process.env.TSKUBELET_TEST_VERBOSE ? createLogger({ verbosity: 4, format: 'text' }) : nullLogger;
}

export interface Env {
  bed: ContainerdBed;
  cri: CriClient;
  dir: string;
  manifests: string;
  rootDir: string;
  logsDir: string;
  close(): Promise<void>;
}

/**
 * Unmounts every mount below `dir`, deepest first. A kubelet that stops leaves its pods (and their
 * tmpfs volumes) in place by design; a test's temporary root must not be removed through them.
 */
export async function unmountUnder(dir: string): Promise<void> {
  const mounts = (await readFile('/proc/mounts', 'utf8'))
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) await promisify(execFile)('umount', ['-l', m]);
}

/** Starts the bed (clean: no pods) and makes the temporary directories. */
export async function setupEnv(): Promise<Env> {
  const bed = await startContainerd();
  await removeAllPods(bed);
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-it-'));
  const cri = createCriClient({ endpoint: bed.endpoint });
  return {
    bed,
    cri,
    dir,
    manifests: join(dir, 'manifests'),
    rootDir: join(dir, 'root'),
    logsDir: join(dir, 'logs'),
    async close() {
      await removeAllPods(bed);
      cri.close();
      await bed.stop();
      await unmountUnder(dir);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Writes atomically (temp file + rename), as editors and config management do. */
export async function writeManifest(env: Env, file: string, pod: Pod | string): Promise<void> {
  const text = typeof pod === 'string' ? pod : stringify(pod);
  const tmp = join(env.manifests, `.${file}.tmp`);
  await writeFile(tmp, text);
  await rename(tmp, join(env.manifests, file));
}

export async function removeManifest(env: Env, file: string): Promise<void> {
  await unlink(join(env.manifests, file));
}

export async function sandboxesOf(env: Env, uid: string): Promise<PodSandbox[]> {
  return env.cri.runtime.listPodSandbox({ labelSelector: { [LABEL_POD_UID]: uid } });
}

export async function containersOf(env: Env, uid: string): Promise<CriContainer[]> {
  return env.cri.runtime.listContainers({ labelSelector: { [LABEL_POD_UID]: uid } });
}

/** A Pod manifest object with sensible test defaults. */
export function podManifest(name: string, spec: Partial<Pod['spec']> & Pick<Pod['spec'], 'containers'>): Pod {
  return buildManifest(name, { terminationGracePeriodSeconds: 2, spec });
}
