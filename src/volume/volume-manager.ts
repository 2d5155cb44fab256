import { createHash } from 'node:crypto';
import { statfsSync } from 'node:fs';
import { chmod, chown, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { availableParallelism, totalmem } from 'node:os';
import { isAbsolute, join, normalize, relative, sep } from 'node:path';
import { podFullName, type Container, type KubeletPod, type Volume } from '../api/types.ts';
import { parseQuantity } from '../api/quantity.ts';
import { KubeletError, describeError, isKubeletError } from '../util/errors.ts';
import { nullLogger, type Logger } from '../util/logger.ts';
import type { Mount } from '../runtime/cri/types.ts';
import { writeAtomically, type FileProjection } from './atomic-writer.ts';
import type { NodeAllocatable } from './downward-api.ts';
import { mountTmpfs, unmountAllUnder } from './mounts.ts';
import type { VolumeObjectSource } from './objects.ts';
import type { ServiceAccountTokenSource } from './token-manager.ts';
import {
  MEMORY_BACKED,
  PLUGIN_DIR,
  buildPayload,
  isProjectionKind,
  type ProjectionKind,
} from './projection.ts';

/**
 * Prepares a pod's volumes on the host and turns a container's volumeMounts into CRI mounts
 * (upstream volumemanager + the emptyDir/hostPath/secret/configMap/downwardAPI/projected plugins).
 * Supported: `emptyDir` (disk or Memory medium), `hostPath` with its type checks, and the projected
 * kinds `secret`, `configMap`, `downwardAPI`, `projected` (its secret/configMap/downwardAPI and
 * serviceAccountToken sources; a refreshed token is written on the next setup, i.e. the next sync).
 * Any other volume type fails with a clear error instead of running containers without the volume.
 */
export interface VolumeManager {
  /**
   * Creates what the pod's volumes need and refreshes secret/configMap/downwardAPI/projected content
   * (atomically, only when it changed); idempotent and cheap when nothing changed, so it may run on
   * every sync. Throws KubeletError naming the volume.
   */
  setUpPodVolumes(pod: KubeletPod, signal?: AbortSignal): Promise<void>;
  /** The CRI mounts for one container (after setUpPodVolumes). Projected kinds are always read-only. */
  mountsFor(pod: KubeletPod, container: Container): Promise<Mount[]>;
  /**
   * Unmounts every mount under the pod's directory (tmpfs of secret/Memory volumes), then removes the
   * directory (emptyDir data included) once the pod is gone. If an unmount fails it throws and removes
   * nothing: a recursive delete must never run through a live mount.
   */
  cleanUpPod(uid: string, signal?: AbortSignal): Promise<void>;
  /**
   * Unmounts and removes only the pod's volumes (`<pod dir>/volumes`), keeping the rest of its
   * directory (termination messages, etc-hosts): for a finished pod that is still in its source
   * (upstream's volume manager tears down a terminated pod's volumes).
   */
  tearDownVolumes(uid: string, signal?: AbortSignal): Promise<void>;
}

export interface VolumeManagerOptions {
  /** The kubelet root dir; volumes live under `<rootDir>/pods/<uid>/volumes/`. */
  rootDir: string;
  /** Reads secrets and configMaps (cluster mode). Absent: secret/configMap volumes fail clearly. */
  objects?: VolumeObjectSource;
  /** Service-account tokens (cluster mode). Absent: serviceAccountToken sources fail clearly. */
  tokens?: ServiceAccountTokenSource;
  logger?: Logger;
  /** Node allocatable for downward API limits a container does not set (default: this host's size). */
  nodeAllocatable?: NodeAllocatable;
  /**
   * Mount tmpfs for memory-backed volumes (secret, downwardAPI, projected, emptyDir Memory), as
   * upstream does. Default true; false keeps them on disk (with a warning) where mounting is not
   * permitted. When true and the mount fails, setup fails (no silent fallback to disk).
   */
  tmpfs?: boolean;
}

/** Upstream pod directory layout: `<rootDir>/pods/<uid>/volumes/<plugin~name>/<volume>`. */
export function podDir(rootDir: string, uid: string): string {
  return join(rootDir, 'pods', uid);
}

export function emptyDirPath(rootDir: string, uid: string, volume: string): string {
  return join(podDir(rootDir, uid), 'volumes', 'kubernetes.io~empty-dir', volume);
}

/** Where a secret/configMap/downwardAPI/projected volume's files live on the host. */
export function projectedVolumePath(
  rootDir: string,
  uid: string,
  kind: ProjectionKind,
  volume: string,
): string {
  return join(podDir(rootDir, uid), 'volumes', PLUGIN_DIR[kind], volume);
}

/** This host's size, standing in for node allocatable when the kubelet passes none. */
function hostAllocatable(rootDir: string, log: Logger): NodeAllocatable {
  let storage: number | undefined;
  try {
    const s = statfsSync(rootDir);
    storage = s.blocks * s.bsize;
  } catch (err) {
    log.warn('no ephemeral-storage size for downward API limits (they read 0)', { err: describeError(err) });
  }
  return () => ({
    cpu: availableParallelism(),
    memory: totalmem(),
    ...(storage !== undefined && { 'ephemeral-storage': storage }),
  });
}

/**
 * Identifies a payload + ownership: equal fingerprints mean nothing on disk needs to change. The
 * bytes are hashed, so a changed object or a refreshed service-account token changes it.
 */
function fingerprint(payload: Map<string, FileProjection>, gid: number | undefined): string {
  const h = createHash('sha256');
  h.update(`gid=${gid ?? ''}\0`);
  for (const p of [...payload.keys()].sort()) {
    const f = payload.get(p);
    if (!f) continue;
    h.update(`${p}\0${f.mode}\0${f.data.byteLength}\0`);
    h.update(f.data);
  }
  return h.digest('hex');
}

type HostPathType =
  '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

async function checkHostPath(volume: string, path: string, type: HostPathType): Promise<void> {
  const op = `mount volume ${volume}`;
  const st = await stat(path).catch(() => undefined);
  switch (type) {
    case '':
      return; // no check, as upstream
    case 'DirectoryOrCreate':
      if (!st) await mkdir(path, { recursive: true, mode: 0o755 });
      else if (!st.isDirectory())
        throw new KubeletError('FailedPrecondition', op, `hostPath ${path} is not a directory`);
      return;
    case 'FileOrCreate':
      if (!st) await writeFile(path, '', { mode: 0o644, flag: 'a' });
      else if (!st.isFile())
        throw new KubeletError('FailedPrecondition', op, `hostPath ${path} is not a file`);
      return;
    case 'Directory':
    case 'File':
    case 'Socket':
    case 'CharDevice':
    case 'BlockDevice': {
      const ok =
        st &&
        ((type === 'Directory' && st.isDirectory()) ||
          (type === 'File' && st.isFile()) ||
          (type === 'Socket' && st.isSocket()) ||
          (type === 'CharDevice' && st.isCharacterDevice()) ||
          (type === 'BlockDevice' && st.isBlockDevice()));
      if (!ok) {
        throw new KubeletError(
          'FailedPrecondition',
          op,
          st
            ? `hostPath ${path} is not a ${type}`
            : `hostPath type check failed: ${path} does not exist (type ${type})`,
        );
      }
      return;
    }
  }
}

function volumeKind(v: Volume): string {
  const kinds = Object.keys(v).filter((k) => k !== 'name' && v[k] !== undefined);
  return kinds[0] ?? 'emptyDir';
}

/**
 * Upstream SetVolumeOwnership for a volume's directory: group-owned by the pod's fsGroup, with the
 * setgid bit so that what is created inside inherits the group, and `mask` (rw 0770, ro 0440) added.
 */
async function setGroupOwnership(dir: string, gid: number, mask: number): Promise<void> {
  const st = await stat(dir);
  await chown(dir, -1, gid);
  await chmod(dir, (st.mode & 0o7777) | 0o2000 | mask);
}

/**
 * Upstream SafeMakeDir for a missing subPath: each missing directory below the volume root is made
 * with the root's own mode (setgid included, whatever the umask), so a subPath of a world-writable
 * or fsGroup-owned volume is so too.
 */
async function makeSubPathDirs(root: string, target: string): Promise<void> {
  const mode = (await stat(root)).mode & 0o7777;
  let dir = root;
  for (const part of relative(root, target).split(sep)) {
    dir = join(dir, part);
    const made = await mkdir(dir).then(
      () => true,
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'EEXIST') return false;
        throw err;
      },
    );
    if (made) await chmod(dir, mode);
  }
}

/** Joins a subPath under a volume root, refusing anything that escapes it. */
function withSubPath(root: string, subPath: string | undefined, volume: string): string {
  if (!subPath) return root;
  const p = normalize(subPath);
  if (isAbsolute(p) || p === '..' || p.startsWith(`..${sep}`)) {
    throw new KubeletError(
      'InvalidArgument',
      `mount volume ${volume}`,
      `subPath "${subPath}" must be a relative path inside the volume`,
    );
  }
  return join(root, p);
}

export function createVolumeManager(opts: VolumeManagerOptions): VolumeManager {
  const log = opts.logger ?? nullLogger;
  const useTmpfs = opts.tmpfs ?? true;
  let allocatable = opts.nodeAllocatable;
  /** Per pod UID, per volume: the fingerprint of what is on disk (skips rewrites on every sync). */
  const written = new Map<string, Map<string, string>>();
  /** Memory-backed volumes already warned about being on disk (tmpfs: false), by `uid/volume`. */
  const warnedDisk = new Set<string>();
  /** Directories this process mounted tmpfs on (spares a mount-table read on every sync). */
  const mounted = new Set<string>();

  function hostPathOf(pod: KubeletPod, v: Volume): string {
    const uid = pod.metadata.uid;
    const kind = volumeKind(v);
    if (isProjectionKind(kind)) return projectedVolumePath(opts.rootDir, uid, kind, v.name);
    switch (kind) {
      case 'emptyDir':
        return emptyDirPath(opts.rootDir, uid, v.name);
      case 'hostPath':
        return v.hostPath?.path ?? '';
      default:
        throw new KubeletError(
          'Unimplemented',
          `mount volume ${v.name}`,
          `volume type ${kind} is not supported yet ` +
            '(supported: emptyDir, hostPath, secret, configMap, downwardAPI, projected)',
        );
    }
  }

  /** Creates `dir`, on a fresh tmpfs when the volume is memory-backed. */
  async function prepareDir(pod: KubeletPod, v: Volume, dir: string, memory: boolean, signal?: AbortSignal) {
    await mkdir(dir, { recursive: true, mode: 0o777 });
    if (!memory) {
      await chmod(dir, 0o777); // world-writable like upstream's emptyDir, whatever the umask
      return;
    }
    if (!useTmpfs) {
      const key = `${pod.metadata.uid}/${v.name}`;
      if (!warnedDisk.has(key)) {
        warnedDisk.add(key);
        log.warn('memory-backed volume kept on disk (tmpfs disabled)', {
          pod: podFullName(pod),
          podUID: pod.metadata.uid,
          volume: v.name,
        });
      }
      await chmod(dir, 0o777);
      return;
    }
    if (mounted.has(dir)) return;
    const sizeLimit = v.emptyDir?.sizeLimit;
    const sizeBytes = sizeLimit !== undefined ? parseQuantity(sizeLimit, 'emptyDir.sizeLimit') : undefined;
    try {
      await mountTmpfs(dir, { ...(sizeBytes !== undefined && { sizeBytes }), ...(signal && { signal }) });
    } catch (err) {
      const code = isKubeletError(err) ? err.code : 'Internal';
      throw new KubeletError(code, `mount volume ${v.name}`, describeError(err), { cause: err });
    }
    mounted.add(dir);
  }

  async function setUpProjected(pod: KubeletPod, v: Volume, kind: ProjectionKind, signal?: AbortSignal) {
    const uid = pod.metadata.uid;
    // Fetch and check everything before touching the disk (upstream fails before SetUp too).
    allocatable ??= hostAllocatable(opts.rootDir, log);
    const payload = await buildPayload(
      pod,
      v,
      kind,
      {
        allocatable,
        ...(opts.objects && { objects: opts.objects }),
        ...(opts.tokens && { tokens: opts.tokens }),
      },
      signal,
    );
    const gid = pod.spec.securityContext?.fsGroup;
    if (gid !== undefined) {
      // Upstream SetVolumeOwnership for a read-only volume: group-owned by fsGroup, mode | 0440.
      for (const f of payload.values()) f.mode |= 0o440;
    }
    const fp = fingerprint(payload, gid);
    const perPod = written.get(uid) ?? new Map<string, string>();
    written.set(uid, perPod);
    if (perPod.get(v.name) === fp) return;

    const dir = projectedVolumePath(opts.rootDir, uid, kind, v.name);
    await prepareDir(pod, v, dir, MEMORY_BACKED[kind], signal);
    if (gid !== undefined) await setGroupOwnership(dir, gid, 0o440);
    const changed = await writeAtomically(dir, payload, {
      context: `pod ${podFullName(pod)} volume ${v.name}`,
      logger: log,
      ...(gid !== undefined && { gid }),
    });
    perPod.set(v.name, fp);
    if (changed) {
      log.info('volume content written', {
        pod: podFullName(pod),
        podUID: uid,
        volume: v.name,
        kind,
        files: payload.size,
      });
    }
  }

  return {
    async setUpPodVolumes(pod, signal) {
      const uid = pod.metadata.uid;
      await mkdir(join(podDir(opts.rootDir, uid), 'volumes'), { recursive: true });
      for (const v of pod.spec.volumes ?? []) {
        const kind = volumeKind(v);
        if (isProjectionKind(kind)) {
          await setUpProjected(pod, v, kind, signal);
        } else if (kind === 'emptyDir') {
          const medium = v.emptyDir?.medium ?? '';
          if (medium !== '' && medium !== 'Memory') {
            throw new KubeletError(
              'Unimplemented',
              `mount volume ${v.name}`,
              `emptyDir medium ${medium} is not supported yet`,
            );
          }
          // World-writable like upstream's emptyDir, so non-root containers can use it.
          const dir = emptyDirPath(opts.rootDir, uid, v.name);
          await prepareDir(pod, v, dir, medium === 'Memory', signal);
          const gid = pod.spec.securityContext?.fsGroup;
          // Upstream SetVolumeOwnership (read-write): what the pod writes belongs to its fsGroup.
          if (gid !== undefined) await setGroupOwnership(dir, gid, 0o770);
        } else if (kind === 'hostPath') {
          await checkHostPath(v.name, v.hostPath?.path ?? '', (v.hostPath?.type ?? '') as HostPathType);
        } else {
          hostPathOf(pod, v); // throws the clear "not supported" error
        }
      }
    },
    async mountsFor(pod, container) {
      const byName = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v]));
      const mounts: Mount[] = [];
      for (const m of container.volumeMounts ?? []) {
        const v = byName.get(m.name);
        if (!v) {
          throw new KubeletError(
            'NotFound',
            `mount volume ${m.name}`,
            `container ${container.name} mounts unknown volume ${m.name}`,
          );
        }
        const root = hostPathOf(pod, v);
        const hostPath = withSubPath(root, m.subPath, v.name);
        // Upstream forces secret/configMap/downwardAPI/projected mounts read-only.
        const projected = isProjectionKind(volumeKind(v));
        // Upstream creates a missing subPath directory; an existing file there is fine too. In a
        // projected volume the kubelet owns the content: a missing subPath is a missing key.
        if (m.subPath && !(await stat(hostPath).catch(() => undefined))) {
          if (projected) {
            throw new KubeletError(
              'NotFound',
              `mount volume ${v.name}`,
              `subPath "${m.subPath}" does not exist in volume ${v.name}`,
            );
          }
          await makeSubPathDirs(root, hostPath);
        }
        const propagation =
          m.mountPropagation === 'Bidirectional'
            ? 'PROPAGATION_BIDIRECTIONAL'
            : m.mountPropagation === 'HostToContainer'
              ? 'PROPAGATION_HOST_TO_CONTAINER'
              : 'PROPAGATION_PRIVATE';
        const readonly = projected || (m.readOnly ?? false);
        mounts.push({ containerPath: m.mountPath, hostPath, readonly, propagation });
      }
      return mounts;
    },
    async tearDownVolumes(uid, signal) {
      if (uid === '') return;
      const dir = join(podDir(opts.rootDir, uid), 'volumes');
      try {
        await unmountAllUnder(dir, signal);
      } catch (err) {
        throw new KubeletError(
          'Internal',
          `tear down pod ${uid} volumes`,
          `${describeError(err)}; volumes kept`,
          {
            cause: err,
          },
        );
      }
      await rm(dir, { recursive: true, force: true });
      written.delete(uid);
      opts.tokens?.forgetPod(uid);
      for (const d of mounted) if (d.startsWith(dir + sep)) mounted.delete(d);
    },
    async cleanUpPod(uid, signal) {
      if (uid === '') return;
      const dir = podDir(opts.rootDir, uid);
      let unmounted: string[];
      try {
        unmounted = await unmountAllUnder(dir, signal);
      } catch (err) {
        throw new KubeletError(
          'Internal',
          `clean up pod ${uid} volumes`,
          `${describeError(err)}; pod directory kept`,
          {
            cause: err,
          },
        );
      }
      if (unmounted.length > 0) log.debug('unmounted pod volumes', { podUID: uid, mounts: unmounted });
      await rm(dir, { recursive: true, force: true });
      written.delete(uid);
      opts.tokens?.forgetPod(uid); // upstream projected TearDown → DeleteServiceAccountToken
      for (const d of mounted) if (d.startsWith(dir + sep)) mounted.delete(d);
      for (const k of warnedDisk) if (k.startsWith(`${uid}/`)) warnedDisk.delete(k);
    },
  };
}
