import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { podFullName, type Container, type KubeletPod, type Volume } from '../api/types.ts';
import type { EventRecorder } from '../api/events.ts';
import { parseQuantity } from '../api/quantity.ts';
import { usedVolumeNames } from '../api/pod-references.ts';
import { KubeletError, describeError, isKubeletError } from '../util/errors.ts';
import { nullLogger, type Logger } from '../util/logger.ts';
import { KUBELET_DIR_MODE, ensurePrivateDir } from '../util/private-dir.ts';
import type { Device, Mount } from '../runtime/cri/index.ts';
import type { NodeAllocatable } from './downward-api.ts';
import { checkHostPath, setGroupOwnership, type HostPathType } from './host-dirs.ts';
import { createPodSerializer, projectsObject } from './live-updates.ts';
import { mountTmpfs, unmountAllUnder } from './mounts.ts';
import type { VolumeObjectSource } from './objects.ts';
import { emptyDirPath, podDir, projectedVolumePath } from './paths.ts';
import { isProjectionKind } from './projection.ts';
import { SUBPATH_DIR, prepareSubPathMount } from './subpath.ts';
import { createProjector } from './projector.ts';
import type { ServiceAccountTokenSource } from './token-manager.ts';
import type { TimelineRecorder } from '../timeline/index.ts';
import { claimSource } from './persistent-volumes.ts';
import { createClaimVolumes } from './claim-volumes.ts';
import type { InlineVolumePlugin, PodMeasuredVolume, PvPlugin } from './pv-plugins.ts';
import { createVolumeMetricsRecorder, inlineVolumePlugin, type VolumeMetrics } from './volume-metrics.ts';

export { emptyDirPath, podDir, projectedVolumePath } from './paths.ts';

/** An emptyDir's root: upstream's perm, so a container of any user can write to it. */
const EMPTY_DIR_MODE = 0o777;
/**
 * A Memory emptyDir's tmpfs root: sticky as well, as upstream's (mounted without a mode, its tmpfs
 * root is 1777; the e2e "emptydir subpath on tmpfs" expects the `t` bit).
 */
const MEMORY_EMPTY_DIR_MODE = 0o1777;
/** A secret/configMap/downwardAPI/projected volume's root: mounted read-only, readable by any container user. */
const PROJECTED_DIR_MODE = 0o755;

/** Bound on a refresh started by an object change (each read inside has its own 10 s timeout). */
const CHANGE_REFRESH_TIMEOUT_MS = 60_000;

/**
 * Prepares a pod's volumes on the host and turns a container's volumeMounts into CRI mounts
 * (upstream volumemanager + the emptyDir/hostPath/secret/configMap/downwardAPI/projected plugins).
 * Supported: `emptyDir` (disk or Memory medium), `hostPath` with its type checks, and the projected
 * kinds `secret`, `configMap`, `downwardAPI`, `projected` (its secret/configMap/downwardAPI and
 * serviceAccountToken sources; a refreshed token is written on the next setup, i.e. the next sync).
 * `persistentVolumeClaim` resolves through the API to its bound PV (persistent-volumes.ts) and is set
 * up by the plugin of the PV's type (pv-plugins.ts: hostPath, local; Filesystem and, for local,
 * Block); a claim is resolved once per pod, as upstream's populator processes a pod once.
 * Any other volume type fails with a clear error instead of running containers without the volume.
 *
 * Live updates (upstream's remount of plugins that `RequiresRemount()`): every setup re-projects
 * the projected kinds from the current objects and the pod as given (labels and annotations), and
 * rewrites a volume only when its content changed (projector.ts). When the object source reports
 * changes (the Watch strategy), the pods whose volumes project a changed object are set up again at
 * once with the pod last given, instead of waiting for their next sync. A `subPath` mount binds the
 * file the volume held when the container started, so it never sees an update (as upstream).
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
   * The CRI devices for one container's volumeDevices (block-mode claims, after setUpPodVolumes;
   * upstream makeBlockVolumes): permissions `mrw`, or `r` when the claim reference is readOnly.
   */
  devicesFor(pod: KubeletPod, container: Container): Promise<Device[]>;
  /** The pod's extra supplemental groups from its PVs' `pv.beta.kubernetes.io/gid` (claim-volumes.ts). */
  extraSupplementalGroups(pod: KubeletPod): number[];
  /**
   * The pod's volumes that their plugin measures (volume stats): its set-up persistentVolumeClaim
   * volumes (with `pvcRef`) and its inline CSI volumes (the driver's NodeGetVolumeStats). The
   * other kinds are measured by walking their directory.
   */
  measuredVolumes(uid: string): PodMeasuredVolume[];
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
  /** Records FailedMount when a set-up volume cannot be updated (it keeps its content); absent: logged. */
  recorder?: EventRecorder;
  /** Told when each volume of a pod is first set up (`volume-ready`) or fails (`failed`); absent: nothing. */
  timeline?: Pick<TimelineRecorder, 'record' | 'recordFirst'>;
  /**
   * This node's name and labels, for a PV's required node affinity (checked before mounting).
   * Absent: a PV with required node affinity is refused (never mounted unchecked).
   */
  node?: () => { name: string; labels: Record<string, string> };
  /** PV plugins beyond hostPath and local, by PV source field (the kubelet adds `csi`). */
  pvPlugins?: Readonly<Record<string, PvPlugin>>;
  /** `csi:` volumes in the pod (inline ephemeral). Absent: they fail clearly. */
  inlineCsi?: InlineVolumePlugin;
  /** storage_operation_* and volume_manager_total_volumes (volume-metrics.ts); absent: not reported. */
  metrics?: VolumeMetrics;
}

function volumeKind(v: Volume): string {
  const kinds = Object.keys(v).filter((k) => k !== 'name' && v[k] !== undefined);
  return kinds[0] ?? 'emptyDir';
}

export function createVolumeManager(opts: VolumeManagerOptions): VolumeManager {
  const log = opts.logger ?? nullLogger;
  const useTmpfs = opts.tmpfs ?? true;
  /** The pod each UID was last set up with (what a refresh after an object change uses). */
  const lastPod = new Map<string, KubeletPod>();
  /** UIDs with a change refresh queued and not started (at most one each). */
  const refreshQueued = new Set<string>();
  const serial = createPodSerializer();
  /** Memory-backed volumes already warned about being on disk (tmpfs: false), by `uid/volume`. */
  const warnedDisk = new Set<string>();
  /** Directories this process mounted tmpfs on (spares a mount-table read on every sync). */
  const mounted = new Set<string>();
  const claimVols = createClaimVolumes({
    rootDir: opts.rootDir,
    logger: log,
    ...(opts.objects && { objects: opts.objects }),
    ...(opts.recorder && { recorder: opts.recorder }),
    ...(opts.node && { node: opts.node }),
    ...(opts.pvPlugins && { plugins: opts.pvPlugins }),
  });
  const volumeMetrics = createVolumeMetricsRecorder({
    metrics: opts.metrics,
    pluginOf: (pod, v, kind) => {
      if (kind === 'persistentVolumeClaim') return claimVols.pluginOf(pod.metadata.uid, v.name);
      const name = inlineVolumePlugin(kind, v);
      return name === undefined ? undefined : { name, block: false };
    },
    desiredPods: () => lastPod.values(),
    kindOf: volumeKind,
    logger: log,
  });

  function hostPathOf(pod: KubeletPod, v: Volume): string {
    const uid = pod.metadata.uid;
    const kind = volumeKind(v);
    if (isProjectionKind(kind)) return projectedVolumePath(opts.rootDir, uid, kind, v.name);
    switch (kind) {
      case 'emptyDir':
        return emptyDirPath(opts.rootDir, uid, v.name);
      case 'hostPath':
        return v.hostPath?.path ?? '';
      case 'persistentVolumeClaim':
        return claimVols.get(pod, v.name).hostPath;
      case 'csi':
        if (opts.inlineCsi) return opts.inlineCsi.hostPath(pod, v);
        break;
      default:
        break;
    }
    throw new KubeletError(
      'Unimplemented',
      `mount volume ${v.name}`,
      `volume type ${kind} is not supported yet ` +
        `(supported: emptyDir, hostPath, secret, configMap, downwardAPI, projected, persistentVolumeClaim${opts.inlineCsi ? ', csi' : ''})`,
    );
  }

  /**
   * Creates `dir`, on a fresh tmpfs when the volume is memory-backed. Its parents (the pod dir,
   * `volumes/`, the plugin dir) are kubelet-private (0750): they are what keeps other local users
   * out. The volume's own root has the mode containers need, set explicitly (a tmpfs is mounted with
   * `mode=`): emptyDir 0777 (1777 on tmpfs, as upstream's), so any container user can write; the
   * projected kinds 0755 (mounted read-only; any user can read, nobody but the kubelet writes).
   */
  async function prepareDir(pod: KubeletPod, v: Volume, dir: string, memory: boolean, signal?: AbortSignal) {
    const onTmpfs = memory && useTmpfs;
    const mode = v.emptyDir ? (onTmpfs ? MEMORY_EMPTY_DIR_MODE : EMPTY_DIR_MODE) : PROJECTED_DIR_MODE;
    await mkdir(dirname(dir), { recursive: true, mode: KUBELET_DIR_MODE });
    await mkdir(dir, { recursive: true, mode });
    if (!onTmpfs) {
      if (memory) {
        const key = `${pod.metadata.uid}/${v.name}`;
        if (!warnedDisk.has(key)) {
          warnedDisk.add(key);
          log.warn('memory-backed volume kept on disk (tmpfs disabled)', {
            pod: podFullName(pod),
            podUID: pod.metadata.uid,
            volume: v.name,
          });
        }
      }
      await chmod(dir, mode); // exact, whatever the umask
      return;
    }
    if (mounted.has(dir)) return;
    const sizeLimit = v.emptyDir?.sizeLimit;
    const sizeBytes = sizeLimit !== undefined ? parseQuantity(sizeLimit, 'emptyDir.sizeLimit') : undefined;
    try {
      await mountTmpfs(dir, {
        mode,
        ...(sizeBytes !== undefined && { sizeBytes }),
        ...(signal && { signal }),
      });
    } catch (err) {
      const code = isKubeletError(err) ? err.code : 'Internal';
      throw new KubeletError(code, `mount volume ${v.name}`, describeError(err), { cause: err });
    }
    mounted.add(dir);
  }

  const projector = createProjector({
    rootDir: opts.rootDir,
    logger: log,
    prepareDir,
    ...(opts.objects && { objects: opts.objects }),
    ...(opts.tokens && { tokens: opts.tokens }),
    ...(opts.recorder && { recorder: opts.recorder }),
    ...(opts.nodeAllocatable && { nodeAllocatable: opts.nodeAllocatable }),
  });

  /**
   * Unmounts, then removes the pod's directory (VolumeManager.cleanUpPod), or with `only: 'volumes'`
   * just its subPath binds and `<pod dir>/volumes` (tearDownVolumes).
   */
  async function cleanUp(uid: string, signal?: AbortSignal, only?: 'volumes'): Promise<void> {
    // The subPath binds first: they pin files of the volumes below.
    const pdir = podDir(opts.rootDir, uid);
    const dirs = only
      ? [join(pdir, SUBPATH_DIR), join(pdir, 'volumes'), join(pdir, 'volumeDevices')]
      : [pdir];
    await claimVols.tearDownPluginDirs(uid, signal);
    for (const dir of dirs) {
      let unmounted: string[];
      try {
        unmounted = await unmountAllUnder(dir, signal);
      } catch (err) {
        throw new KubeletError(
          'Internal',
          `clean up pod ${uid} volumes`,
          `${describeError(err)}; ${only ? 'volumes' : 'pod directory'} kept`,
          { cause: err },
        );
      }
      if (unmounted.length > 0) log.debug('unmounted pod volumes', { podUID: uid, mounts: unmounted });
      await rm(dir, { recursive: true, force: true });
    }
    projector.forget(uid);
    claimVols.forget(uid);
    await claimVols.releaseUnused(signal);
    opts.tokens?.forgetPod(uid); // upstream projected TearDown → DeleteServiceAccountToken
    for (const d of mounted) if (dirs.some((dir) => d.startsWith(dir + sep))) mounted.delete(d);
    for (const k of warnedDisk) if (k.startsWith(`${uid}/`)) warnedDisk.delete(k);
  }

  async function setUp(pod: KubeletPod, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata.uid;
    // Upstream makePodDataDirs: the pod dir and its volumes dir, 0750 (an older, looser one is tightened).
    await ensurePrivateDir(podDir(opts.rootDir, uid), log);
    await ensurePrivateDir(join(podDir(opts.rootDir, uid), 'volumes'), log);
    const used = usedVolumeNames(pod);
    for (const v of pod.spec.volumes ?? []) {
      if (!used.has(v.name)) {
        log.debug('skipping a volume no container uses', {
          pod: podFullName(pod),
          podUID: uid,
          volume: v.name,
        });
        continue;
      }
      try {
        await volumeMetrics.setUp(pod, v, volumeKind(v), () => setUpVolume(pod, v, signal), signal);
      } catch (err) {
        if (!signal?.aborted) {
          opts.timeline?.record(uid, 'failed', {
            failedStep: 'volume-ready',
            volume: v.name,
            error: describeError(err),
          });
        }
        throw err;
      }
      opts.timeline?.recordFirst(uid, 'volume-ready', { volume: v.name });
    }
  }

  async function setUpVolume(pod: KubeletPod, v: Volume, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata.uid;
    const kind = volumeKind(v);
    if (isProjectionKind(kind)) {
      await projector.project(pod, v, kind, signal);
    } else if (kind === 'emptyDir') {
      const medium = v.emptyDir?.medium ?? '';
      if (medium !== '' && medium !== 'Memory') {
        throw new KubeletError(
          'Unimplemented',
          `mount volume ${v.name}`,
          `emptyDir medium ${medium} is not supported yet`,
        );
      }
      const dir = emptyDirPath(opts.rootDir, uid, v.name);
      await prepareDir(pod, v, dir, medium === 'Memory', signal);
      const gid = pod.spec.securityContext?.fsGroup;
      // Upstream SetVolumeOwnership (read-write): what the pod writes belongs to its fsGroup.
      if (gid !== undefined) await setGroupOwnership(dir, gid, 0o770);
    } else if (kind === 'hostPath') {
      await checkHostPath(v.name, v.hostPath?.path ?? '', (v.hostPath?.type ?? '') as HostPathType);
    } else if (kind === 'persistentVolumeClaim') {
      await claimVols.setUp(pod, v, signal);
    } else if (kind === 'csi' && opts.inlineCsi) {
      await opts.inlineCsi.setUp(pod, v, signal);
    } else {
      hostPathOf(pod, v); // throws the clear "not supported" error
    }
  }

  /** Sets the pod's volumes up again after an object change, once its earlier work is done. */
  function refreshAfterChange(uid: string): void {
    if (refreshQueued.has(uid)) return;
    refreshQueued.add(uid);
    const signal = AbortSignal.timeout(CHANGE_REFRESH_TIMEOUT_MS);
    serial
      .run(uid, async () => {
        refreshQueued.delete(uid);
        const pod = lastPod.get(uid); // gone: cleaned up meanwhile
        if (pod) await setUp(pod, signal);
      })
      .catch((err: unknown) => {
        refreshQueued.delete(uid);
        const pod = lastPod.get(uid);
        // The pod's next sync sets up again and reports what still fails.
        log.warn('volume refresh after an object change failed', {
          ...(pod && { pod: podFullName(pod) }),
          podUID: uid,
          err: describeError(err),
        });
      });
  }

  opts.objects?.onObjectChange?.((change) => {
    for (const [uid, pod] of lastPod) {
      if (!projectsObject(pod, change)) continue;
      log.debug('object changed; refreshing the pod volumes that project it', {
        pod: podFullName(pod),
        podUID: uid,
        object: `${change.kind} ${change.namespace}/${change.name}`,
      });
      refreshAfterChange(uid);
    }
  });

  return {
    async setUpPodVolumes(pod, signal) {
      lastPod.set(pod.metadata.uid, pod);
      await serial.run(pod.metadata.uid, () => setUp(pod, signal), signal);
    },
    async mountsFor(pod, container) {
      const byName = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v]));
      const mounts: Mount[] = [];
      for (const [index, m] of (container.volumeMounts ?? []).entries()) {
        const v = byName.get(m.name);
        if (!v) {
          throw new KubeletError(
            'NotFound',
            `mount volume ${m.name}`,
            `container ${container.name} mounts unknown volume ${m.name}`,
          );
        }
        const root = hostPathOf(pod, v);
        // Upstream forces secret/configMap/downwardAPI/projected mounts read-only.
        const projected = isProjectionKind(volumeKind(v));
        const hostPath = m.subPath
          ? await prepareSubPathMount({
              rootDir: opts.rootDir,
              logger: log,
              pod,
              container: container.name,
              index,
              volume: v.name,
              volumeRoot: root,
              subPath: m.subPath,
              projected,
            })
          : root;
        const propagation =
          m.mountPropagation === 'Bidirectional'
            ? 'PROPAGATION_BIDIRECTIONAL'
            : m.mountPropagation === 'HostToContainer'
              ? 'PROPAGATION_HOST_TO_CONTAINER'
              : 'PROPAGATION_PRIVATE';
        // Upstream makeMounts: the mount's readOnly or the volume's (a claim reference's readOnly).
        const claimReadOnly = claimSource(v) ? claimVols.get(pod, v.name).readOnly : false;
        const readonly = projected || claimReadOnly || (m.readOnly ?? false);
        mounts.push({ containerPath: m.mountPath, hostPath, readonly, propagation });
      }
      return mounts;
    },
    devicesFor: (pod, container) => claimVols.devicesFor(pod, container),
    extraSupplementalGroups: (pod) => claimVols.extraSupplementalGroups(pod),
    measuredVolumes(uid) {
      const inline = opts.inlineCsi;
      const pod = lastPod.get(uid);
      const inlineCsi: PodMeasuredVolume[] =
        inline?.metrics && pod
          ? (pod.spec.volumes ?? [])
              .filter((v) => v.csi !== undefined)
              .map((v) => ({
                volume: v.name,
                mode: 'Filesystem',
                metrics: () => inline.metrics?.(uid, v.name),
              }))
          : [];
      return [...claimVols.list(uid), ...inlineCsi];
    },
    async tearDownVolumes(uid, signal) {
      if (uid === '') return;
      lastPod.delete(uid); // a finished pod's volumes are not refreshed again
      refreshQueued.delete(uid);
      await serial.run(uid, () => volumeMetrics.tearDown(uid, () => cleanUp(uid, signal, 'volumes')), signal);
    },
    async cleanUpPod(uid, signal) {
      if (uid === '') return;
      lastPod.delete(uid); // no refresh starts for it any more
      refreshQueued.delete(uid);
      await serial.run(uid, () => volumeMetrics.tearDown(uid, () => cleanUp(uid, signal)), signal);
    },
  };
}
