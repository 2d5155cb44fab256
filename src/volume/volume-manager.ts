import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { isAbsolute, join, normalize, sep } from 'node:path';
import type { Container, Pod, Volume } from '../api/types.ts';
import { KubeletError } from '../util/errors.ts';
import type { Mount } from '../runtime/cri/types.ts';

/**
 * Prepares a pod's volumes on the host and turns a container's volumeMounts into CRI mounts
 * (upstream volumemanager + the emptyDir/hostPath plugins). Supported now: `emptyDir` (disk medium)
 * and `hostPath` with its type checks. Any other volume type fails the pod's containers with a
 * clear CreateContainerConfigError instead of running them without the volume.
 */
export interface VolumeManager {
  /** Creates what the pod's volumes need; idempotent. Throws KubeletError naming the volume. */
  setUpPodVolumes(pod: Pod): Promise<void>;
  /** The CRI mounts for one container (after setUpPodVolumes). */
  mountsFor(pod: Pod, container: Container): Promise<Mount[]>;
  /** Removes the pod's directory (emptyDir data included) once the pod is gone. */
  cleanUpPod(uid: string): Promise<void>;
}

/** Upstream pod directory layout: `<rootDir>/pods/<uid>/volumes/<plugin~name>/<volume>`. */
export function podDir(rootDir: string, uid: string): string {
  return join(rootDir, 'pods', uid);
}

export function emptyDirPath(rootDir: string, uid: string, volume: string): string {
  return join(podDir(rootDir, uid), 'volumes', 'kubernetes.io~empty-dir', volume);
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

export function createVolumeManager(opts: { rootDir: string }): VolumeManager {
  function hostPathOf(pod: Pod, v: Volume): string {
    const uid = pod.metadata.uid ?? '';
    switch (volumeKind(v)) {
      case 'emptyDir':
        return emptyDirPath(opts.rootDir, uid, v.name);
      case 'hostPath':
        return v.hostPath?.path ?? '';
      default:
        throw new KubeletError(
          'Unimplemented',
          `mount volume ${v.name}`,
          `volume type ${volumeKind(v)} is not supported yet (supported: emptyDir, hostPath)`,
        );
    }
  }

  return {
    async setUpPodVolumes(pod) {
      const uid = pod.metadata.uid ?? '';
      await mkdir(join(podDir(opts.rootDir, uid), 'volumes'), { recursive: true });
      for (const v of pod.spec.volumes ?? []) {
        const kind = volumeKind(v);
        if (kind === 'emptyDir') {
          if (v.emptyDir?.medium === 'Memory' || v.emptyDir?.medium === 'HugePages') {
            throw new KubeletError(
              'Unimplemented',
              `mount volume ${v.name}`,
              `emptyDir medium ${v.emptyDir.medium} is not supported yet`,
            );
          }
          // World-writable like upstream's emptyDir, so non-root containers can use it.
          await mkdir(emptyDirPath(opts.rootDir, uid, v.name), { recursive: true, mode: 0o777 });
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
        // Upstream creates a missing subPath directory; an existing file there is fine too.
        if (m.subPath && !(await stat(hostPath).catch(() => undefined))) {
          await mkdir(hostPath, { recursive: true, mode: 0o777 });
        }
        const propagation =
          m.mountPropagation === 'Bidirectional'
            ? 'PROPAGATION_BIDIRECTIONAL'
            : m.mountPropagation === 'HostToContainer'
              ? 'PROPAGATION_HOST_TO_CONTAINER'
              : 'PROPAGATION_PRIVATE';
        mounts.push({ containerPath: m.mountPath, hostPath, readonly: m.readOnly ?? false, propagation });
      }
      return mounts;
    },
    async cleanUpPod(uid) {
      if (uid === '') return;
      await rm(podDir(opts.rootDir, uid), { recursive: true, force: true });
    },
  };
}
