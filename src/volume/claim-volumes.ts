/**
 * The persistentVolumeClaim volumes of the pods (upstream volumemanager for PVC-backed volumes: the
 * populator's claim resolution, the reconciler's MountVolume/MapVolume through the PV type's
 * plugin, makeBlockVolumes for the devices). What is set up is remembered per pod; after a kubelet
 * restart the next setup resolves the claim again and the plugin finds (never repeats) its mount.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Container, KubeletPod, Volume } from '../api/types.ts';
import type { EventRecorder } from '../api/events.ts';
import { KubeletError, describeError, errnoCode, isKubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import type { Device } from '../runtime/cri/index.ts';
import type { VolumeObjectSource } from './objects.ts';
import { podDir } from './paths.ts';
import { checkNodeAffinity, claimSource, resolveClaim } from './persistent-volumes.ts';
import {
  PV_PLUGINS,
  escapePluginName,
  type PodMeasuredVolume,
  type PvContext,
  type PvMetrics,
  type PvPlugin,
} from './pv-plugins.ts';
import { qualifiedPluginName, type VolumePlugin } from './volume-metrics.ts';

/** The PV annotation whose group the pod's containers get (upstream volumeutil.VolumeGidAnnotationKey). */
export const PV_GID_ANNOTATION = 'pv.beta.kubernetes.io/gid';

/** A persistentVolumeClaim volume once set up: what containers get, and how. */
export interface ClaimVolume {
  mode: 'Filesystem' | 'Block';
  /** Filesystem: the dir containers bind; Block: the device (or a symlink to it). */
  hostPath: string;
  /** The claim reference's readOnly (upstream: the mounter's ReadOnly attribute). */
  readOnly: boolean;
  pvName: string;
  claimName: string;
  /** The PV's `pv.beta.kubernetes.io/gid` annotation, as written (upstream VolumeGidValue). */
  gid?: string;
  /** Filesystem volumes whose plugin reports statfs numbers: the path to statfs. */
  metricsPath?: string;
  /** Filesystem volumes whose plugin measures usage itself (CSI): the last numbers known. */
  metrics?: () => { usage: PvMetrics; time: number } | undefined;
}

export interface ClaimVolumes {
  /** Resolves and sets up one persistentVolumeClaim volume of the pod; a no-op once done. */
  setUp(pod: KubeletPod, v: Volume, signal?: AbortSignal): Promise<void>;
  /** The set-up volume; throws when it is not set up (yet). */
  get(pod: KubeletPod, volume: string): ClaimVolume;
  /** CRI devices for a container's volumeDevices (upstream makeBlockVolumes). */
  devicesFor(pod: KubeletPod, container: Container): Promise<Device[]>;
  /**
   * The groups named by the `pv.beta.kubernetes.io/gid` annotation of the pod's set-up claim
   * volumes' PVs, each once, except those already in the pod's supplementalGroups and those that
   * are not integers (upstream GetExtraSupplementalGroupsForPod).
   */
  extraSupplementalGroups(pod: KubeletPod): number[];
  /** Runs the plugins' teardown hooks for the pod's volume dirs and device entries on disk (before the generic unmount). */
  tearDownPluginDirs(uid: string, signal?: AbortSignal): Promise<void>;
  /** After a pod's teardown: the plugins release node-wide state no pod uses (PvPlugin.releaseUnused). */
  releaseUnused(signal?: AbortSignal): Promise<void>;
  /** The pod's set-up claim volumes. */
  list(uid: string): PodMeasuredVolume[];
  /**
   * The plugin of a claim volume of the pod once its PV was resolved to one (set up or not), as the
   * volume metrics name it (`kubernetes.io/csi:<driver>` for CSI); undefined before.
   */
  pluginOf(uid: string, volume: string): VolumePlugin | undefined;
  /** Forgets the pod (after its volumes are torn down). */
  forget(uid: string): void;
}

export interface ClaimVolumesOptions {
  rootDir: string;
  logger: Logger;
  objects?: VolumeObjectSource;
  recorder?: EventRecorder;
  node?: () => { name: string; labels: Record<string, string> };
  /**
   * PV plugins beyond the built-in hostPath and local (PV_PLUGINS), by PV source field: the kubelet
   * adds `csi` (src/volume/csi) here.
   */
  plugins?: Readonly<Record<string, PvPlugin>>;
}

export function createClaimVolumes(opts: ClaimVolumesOptions): ClaimVolumes {
  const log = opts.logger;
  const plugins: Readonly<Record<string, PvPlugin>> = { ...PV_PLUGINS, ...opts.plugins };
  /** The PV source types a claim may be bound to here (for the "not supported" message). */
  const supportedTypes = Object.keys(plugins).join(', ');
  /** Set-up persistentVolumeClaim volumes, by pod UID then volume name. */
  const claims = new Map<string, Map<string, ClaimVolume>>();
  /** The resolved claims' plugins, by pod UID then volume name (for the volume metrics). */
  const resolvedPlugins = new Map<string, Map<string, VolumePlugin>>();

  function get(pod: KubeletPod, name: string): ClaimVolume {
    const c = claims.get(pod.metadata.uid)?.get(name);
    if (!c) {
      throw new KubeletError(
        'FailedPrecondition',
        `mount volume ${name}`,
        `volume ${name} is not set up yet`,
      );
    }
    return c;
  }

  /**
   * The plugin teardown hooks for every plugin entry found on disk (so it works for volumes a
   * previous kubelet process set up): PvPlugin.tearDown for `<pod>/volumes/<plugin>/*`, then
   * PvPlugin.unmapDevice for `<pod>/volumeDevices/<plugin>/*`. A failure stops the cleanup: the pod
   * dir is kept and the next cleanup retries.
   */
  async function tearDownPluginDirs(uid: string, signal?: AbortSignal): Promise<void> {
    for (const plugin of Object.values(plugins)) {
      const hooks: [string, ((entry: string, signal?: AbortSignal) => Promise<void>) | undefined][] = [
        ['volumes', plugin.tearDown?.bind(plugin)],
        ['volumeDevices', plugin.unmapDevice?.bind(plugin)],
      ];
      for (const [kind, hook] of hooks) {
        if (!hook) continue;
        const base = join(podDir(opts.rootDir, uid), kind, escapePluginName(plugin.name));
        let names: string[];
        try {
          names = await readdir(base);
        } catch (err) {
          if (errnoCode(err) === 'ENOENT') continue; // the pod has no volume of this plugin and kind
          throw err;
        }
        for (const name of names) {
          const entry = join(base, name);
          try {
            await hook(entry, signal);
          } catch (err) {
            throw new KubeletError(
              isKubeletError(err) ? err.code : 'Internal',
              `clean up pod ${uid} volumes`,
              `tear down ${entry}: ${describeError(err)}; pod directory kept`,
              { cause: err },
            );
          }
          log.info('volume torn down', { podUID: uid, plugin: plugin.name, dir: entry });
        }
      }
    }
  }

  /**
   * A persistentVolumeClaim volume: the claim resolved to its PV once per pod (upstream's populator
   * processes a pod once), the PV's node affinity checked, then set up by its type's plugin. After a
   * kubelet restart this runs again and the plugin finds what the earlier process made.
   */
  async function setUpClaim(pod: KubeletPod, v: Volume, signal?: AbortSignal): Promise<void> {
    const uid = pod.metadata.uid;
    if (claims.get(uid)?.has(v.name)) return;
    const op = `mount volume ${v.name}`;
    const r = await resolveClaim(opts.objects, pod, v, signal);
    const plugin = plugins[r.sourceKind];
    if (!plugin) {
      throw new KubeletError(
        'Unimplemented',
        op,
        `failed to get Plugin from volumeSpec for volume "${r.pvName}" err=no volume plugin matched ` +
          `(PersistentVolume type ${r.sourceKind || '(none)'} is not supported; supported: ${supportedTypes})`,
      );
    }
    let resolved = resolvedPlugins.get(uid);
    if (!resolved) resolvedPlugins.set(uid, (resolved = new Map<string, VolumePlugin>()));
    resolved.set(v.name, {
      name: qualifiedPluginName(plugin.name, r.pv.spec?.csi),
      block: r.volumeMode === 'Block',
    });
    const prefix = r.volumeMode === 'Block' ? 'MapVolume' : 'MountVolume';
    if (r.pv.spec?.nodeAffinity?.required) {
      if (!opts.node) {
        throw new KubeletError(
          'FailedPrecondition',
          op,
          `${prefix}.NodeAffinity check failed for volume "${r.pvName}" : the node's labels are unknown`,
        );
      }
      checkNodeAffinity(v.name, r.pvName, r.pv, opts.node(), prefix);
    }
    const ctx: PvContext = {
      rootDir: opts.rootDir,
      pod,
      volume: v.name,
      pvName: r.pvName,
      pv: r.pv,
      readOnly: r.readOnly,
      logger: log,
      ...(opts.recorder && { recorder: opts.recorder }),
      ...(signal && { signal }),
    };
    let hostPath: string;
    if (r.volumeMode === 'Block') {
      if (!plugin.mapDevice) {
        throw new KubeletError(
          'Unimplemented',
          op,
          `MapVolume.FindMapperPluginBySpec failed for volume "${r.pvName}" : ` +
            `volumeMode Block is not supported for PersistentVolume type ${r.sourceKind}`,
        );
      }
      hostPath = await plugin.mapDevice(ctx);
    } else {
      hostPath = await plugin.setUp(ctx);
    }
    let byName = claims.get(uid);
    if (!byName) claims.set(uid, (byName = new Map<string, ClaimVolume>()));
    byName.set(v.name, {
      mode: r.volumeMode,
      hostPath,
      readOnly: r.readOnly,
      pvName: r.pvName,
      claimName: r.claimName,
      ...(r.pv.metadata?.annotations?.[PV_GID_ANNOTATION] !== undefined
        ? { gid: r.pv.metadata.annotations[PV_GID_ANNOTATION] }
        : {}),
      ...(r.volumeMode === 'Filesystem' && plugin.statfsMetrics ? { metricsPath: hostPath } : {}),
      ...(r.volumeMode === 'Filesystem' && plugin.metrics
        ? { metrics: plugin.metrics.bind(plugin, uid, r.pvName) }
        : {}),
    });
  }

  function devicesFor(pod: KubeletPod, container: Container): Promise<Device[]> {
    const byName = new Map((pod.spec.volumes ?? []).map((v) => [v.name, v]));
    const devices: Device[] = [];
    for (const d of container.volumeDevices ?? []) {
      const v = byName.get(d.name);
      const c = v && claimSource(v) ? claims.get(pod.metadata.uid)?.get(d.name) : undefined;
      if (!c || c.mode !== 'Block') {
        // Upstream makeBlockVolumes' wording.
        return Promise.reject(
          new KubeletError(
            'NotFound',
            `map volume ${d.name}`,
            `cannot find volume "${d.name}" to pass into container "${container.name}"`,
          ),
        );
      }
      devices.push({
        containerPath: d.devicePath,
        hostPath: c.hostPath,
        permissions: c.readOnly ? 'r' : 'mrw',
      });
    }
    return Promise.resolve(devices);
  }

  function extraSupplementalGroups(pod: KubeletPod): number[] {
    const own = new Set(pod.spec.securityContext?.supplementalGroups ?? []);
    const gids = new Set<number>();
    for (const c of claims.get(pod.metadata.uid)?.values() ?? []) {
      // Upstream parses the value as a decimal int64 and skips what does not parse.
      if (c.gid === undefined || !/^[+-]?\d+$/.test(c.gid)) continue;
      const gid = Number(c.gid);
      if (Number.isSafeInteger(gid) && !own.has(gid)) gids.add(gid);
    }
    return [...gids];
  }

  return {
    setUp: setUpClaim,
    get,
    devicesFor,
    extraSupplementalGroups,
    tearDownPluginDirs,
    async releaseUnused(signal) {
      for (const plugin of Object.values(plugins)) await plugin.releaseUnused?.(opts.rootDir, log, signal);
    },
    list: (uid) =>
      [...(claims.get(uid) ?? new Map<string, ClaimVolume>()).entries()].map(([volume, c]) => ({
        volume,
        claimName: c.claimName,
        mode: c.mode,
        ...(c.metricsPath !== undefined ? { metricsPath: c.metricsPath } : {}),
        ...(c.metrics ? { metrics: c.metrics } : {}),
      })),
    pluginOf: (uid, volume) => resolvedPlugins.get(uid)?.get(volume),
    forget: (uid) => {
      claims.delete(uid);
      resolvedPlugins.delete(uid);
    },
  };
}
