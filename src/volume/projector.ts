/**
 * Setting up and re-projecting the volumes whose files the kubelet writes (secret, configMap,
 * downwardAPI, projected): upstream's SetUp of those plugins, which the volume manager repeats on
 * every pod sync because they `RequiresRemount()` (the reconciler's remount). Each run builds the
 * payload from the current objects and the current pod (labels and annotations included), and
 * writes it through the atomic writer only when its fingerprint changed, so a reader sees the old
 * version or the new one, never a mix, and an unchanged volume costs no disk work.
 *
 * A re-projection that fails (the object was deleted, a required key is gone, the API is down)
 * keeps the volume's last content: the error is logged and recorded as a FailedMount event, as
 * upstream's remount does, and the pod's sync goes on. Only a volume never set up fails the sync.
 */
import { createHash } from 'node:crypto';
import { statfsSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';
import { podFullName, type KubeletPod, type Volume } from '../api/types.ts';
import type { EventRecorder } from '../api/events.ts';
import { abortReason } from '../util/abort.ts';
import { describeError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { DATA_DIR_NAME, writeAtomically, type FileProjection } from './atomic-writer.ts';
import type { NodeAllocatable } from './downward-api.ts';
import { setGroupOwnership } from './host-dirs.ts';
import type { VolumeObjectSource } from './objects.ts';
import { projectedVolumePath } from './paths.ts';
import { MEMORY_BACKED, buildPayload, type ProjectionKind } from './projection.ts';
import type { ServiceAccountTokenSource } from './token-manager.ts';

/** Upstream events.FailedMountVolume. */
export const FAILED_MOUNT_REASON = 'FailedMount';

export interface ProjectorOptions {
  rootDir: string;
  objects?: VolumeObjectSource;
  tokens?: ServiceAccountTokenSource;
  logger: Logger;
  /** Where a failed re-projection is reported (FailedMount); absent: only logged. */
  recorder?: EventRecorder;
  nodeAllocatable?: NodeAllocatable;
  /** Creates the volume directory (on tmpfs when memory-backed), owned by the volume manager. */
  prepareDir(pod: KubeletPod, v: Volume, dir: string, memory: boolean, signal?: AbortSignal): Promise<void>;
}

export interface Projector {
  /**
   * Sets up or re-projects one volume. Throws KubeletError naming the volume only when it was never
   * set up (or `signal` aborted); a failed re-projection is reported and leaves the last content.
   */
  project(pod: KubeletPod, v: Volume, kind: ProjectionKind, signal?: AbortSignal): Promise<void>;
  /** Forgets a pod whose volumes are gone. */
  forget(uid: string): void;
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

/** True when the directory holds a version written before (this process or an earlier one). */
async function hasContent(dir: string): Promise<boolean> {
  try {
    return (await lstat(join(dir, DATA_DIR_NAME))).isSymbolicLink();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false; // never set up
    throw err;
  }
}

export function createProjector(opts: ProjectorOptions): Projector {
  const log = opts.logger;
  let allocatable = opts.nodeAllocatable;
  /** Per pod UID, per volume: the fingerprint of what is on disk (skips rewrites on every sync). */
  const written = new Map<string, Map<string, string>>();

  async function setUp(pod: KubeletPod, v: Volume, kind: ProjectionKind, signal?: AbortSignal) {
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
    await opts.prepareDir(pod, v, dir, MEMORY_BACKED[kind], signal);
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
    async project(pod, v, kind, signal) {
      try {
        await setUp(pod, v, kind, signal);
      } catch (err) {
        if (signal?.aborted) throw abortReason(signal);
        const uid = pod.metadata.uid;
        const dir = projectedVolumePath(opts.rootDir, uid, kind, v.name);
        if (!written.get(uid)?.has(v.name) && !(await hasContent(dir))) throw err;
        const message = `MountVolume.SetUp failed: ${describeError(err)}`;
        log.warn('volume not updated; it keeps its last content', {
          pod: podFullName(pod),
          podUID: uid,
          volume: v.name,
          kind,
          err: describeError(err),
        });
        opts.recorder?.event(pod, 'Warning', FAILED_MOUNT_REASON, message);
      }
    },
    forget(uid) {
      written.delete(uid);
    },
  };
}
