/**
 * What the CSI mounter (mounter.ts, filesystem volumes) and block mapper (block.ts, volumeMode Block)
 * share (upstream pkg/volume/csi: csi_client.go's client lookup by driver name, csi_util.go
 * getCredentialsFromSecret, csi_plugin.go getPublishContext / supportsVolumeLifecycleMode /
 * skipAttach, csi_mounter.go podAttributes, csi_client.go asCSIAccessModeV1 and the volume
 * capability NodeStage/NodePublish build): one set of helpers over the same options, so both paths
 * ask the driver, the CSIDriver object, VolumeAttachments and secrets the same way and report
 * failures as the same CsiVolumeErrors.
 */
import { readFile, readdir } from 'node:fs/promises';
import { KubeletError, describeError, errnoCode } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { CSI_TIMEOUT_MS, type CsiCallOptions, type CsiClient } from './csi-client.ts';
import type { DriverStore } from './drivers.ts';
import { isPluginCallError } from './grpc-unix.ts';
import { attachmentName } from './paths.ts';
import type { CsiAccessMode, VolumeCapability } from './protos.ts';
import {
  CsiVolumeError,
  isCsiVolumeError,
  type CsiDriverSpec,
  type CsiPodRef,
  type CsiStep,
  type SecretRef,
} from './volume-types.ts';

/** What the mounter and the block mapper are built from (createCsi fills it in). */
export interface CsiNodeOptions {
  rootDir: string;
  nodeName: string;
  drivers: DriverStore;
  clientFor: (endpoint: string, driverName: string) => CsiClient;
  /** The CSIDriver object's spec; undefined when there is none (404). Absent: treated as none. */
  getCSIDriver?: (name: string, signal?: AbortSignal) => Promise<CsiDriverSpec | undefined>;
  /** A VolumeAttachment's status; undefined when it does not exist. Absent: attach is not checked. */
  getVolumeAttachment?: (
    name: string,
    signal?: AbortSignal,
  ) => Promise<{ attached?: boolean; attachmentMetadata?: Record<string, string> } | undefined>;
  /** A secret's data, decoded; undefined when it does not exist. */
  getSecret?: (
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ) => Promise<Record<string, string> | undefined>;
  logger: Logger;
  /** Every driver call's deadline (default upstream csiTimeout, 2 min). */
  timeoutMs?: number;
}

/** Upstream asCSIAccessModeV1. */
function csiAccessMode(mode: string | undefined): CsiAccessMode {
  switch (mode) {
    case 'ReadWriteOnce':
      return 'SINGLE_NODE_WRITER';
    case 'ReadOnlyMany':
      return 'MULTI_NODE_READER_ONLY';
    case 'ReadWriteMany':
      return 'MULTI_NODE_MULTI_WRITER';
    default:
      return 'UNKNOWN';
  }
}

/** Upstream fsTypeBlockName: the fsType the block mapper passes to ask for block access. */
export const FS_TYPE_BLOCK = 'block';

/** The VolumeCapability of NodeStage/NodePublish: block access for fsType "block", else a mount. */
export function capability(
  fsType: string | undefined,
  mountFlags: string[] | undefined,
  accessMode: string,
): VolumeCapability {
  const access = { mode: csiAccessMode(accessMode) };
  if (fsType === FS_TYPE_BLOCK) return { block: {}, accessMode: access };
  return { mount: { fsType: fsType ?? '', mountFlags: mountFlags ?? [] }, accessMode: access };
}

/** Upstream getPodInfoAttrs: the volume context keys a CSIDriver with podInfoOnMount gets. */
export function podInfoAttributes(pod: CsiPodRef, ephemeral: boolean): Record<string, string> {
  return {
    'csi.storage.k8s.io/pod.name': pod.name,
    'csi.storage.k8s.io/pod.namespace': pod.namespace,
    'csi.storage.k8s.io/pod.uid': pod.uid,
    'csi.storage.k8s.io/serviceAccount.name': pod.serviceAccountName ?? '',
    'csi.storage.k8s.io/ephemeral': String(ephemeral),
  };
}

/** A JSON file's content; undefined when it does not exist. */
export async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** The names in `dir`; none when it does not exist (or is not a dir). */
export async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw err;
  }
}

export interface CsiNodeOps {
  readonly log: Logger;
  readonly timeoutMs: number;
  /** A driver call's options: the deadline and the caller's signal. */
  callOpts: (signal?: AbortSignal) => CsiCallOptions;
  /** A failure as a CsiVolumeError of `step` (uncertain unless the gRPC status is final); rethrows. */
  wrap: (step: CsiStep, what: string) => (err: unknown) => never;
  /** The registered driver's client; a CsiVolumeError (Unavailable) when it is not registered. */
  client: (driver: string, step: CsiStep) => CsiClient;
  /** The CSIDriver object's spec, undefined when there is none. */
  driverSpec(driver: string, signal?: AbortSignal): Promise<CsiDriverSpec | undefined>;
  /** Upstream supportsVolumeLifecycleMode: throws (step `prepare`) when the driver does not allow `mode`. */
  checkLifecycleMode(driver: string, spec: CsiDriverSpec | undefined, mode: 'Persistent' | 'Ephemeral'): void;
  /** A secret reference's data ({} for none); fails the step when it cannot be read. */
  secrets(
    ref: SecretRef | undefined,
    namespace: string,
    step: CsiStep,
    signal?: AbortSignal,
  ): Promise<Record<string, string>>;
  /** Upstream getPublishContext: the VolumeAttachment's metadata unless the CSIDriver says attachRequired: false. */
  publishContext(
    spec: CsiDriverSpec | undefined,
    handle: string,
    driver: string,
    signal?: AbortSignal,
  ): Promise<Record<string, string>>;
}

export function createCsiNodeOps(opts: CsiNodeOptions): CsiNodeOps {
  const log = opts.logger.child({ component: 'csi' });
  const timeoutMs = opts.timeoutMs ?? CSI_TIMEOUT_MS;

  const wrap =
    (step: CsiStep, what: string) =>
    (err: unknown): never => {
      if (isCsiVolumeError(err)) throw err;
      const uncertain = isPluginCallError(err) ? !err.final : false;
      const code = err instanceof KubeletError ? err.code : 'Unknown';
      throw new CsiVolumeError(code, step, `${what}: ${describeError(err)}`, { cause: err, uncertain });
    };

  return {
    log,
    timeoutMs,
    wrap,
    callOpts: (signal) => ({ timeoutMs, ...(signal ? { signal } : {}) }),

    client(driver, step) {
      const d = opts.drivers.get(driver);
      if (!d)
        throw new CsiVolumeError(
          'Unavailable',
          step,
          `driver name ${driver} not found in the list of registered CSI drivers`,
        );
      return opts.clientFor(d.endpoint, driver);
    },

    async driverSpec(driver, signal) {
      if (!opts.getCSIDriver) return undefined;
      return opts.getCSIDriver(driver, signal).catch(wrap('prepare', `failed to get CSIDriver ${driver}`));
    },

    checkLifecycleMode(driver, spec, mode) {
      // Persistent is fine without a CSIDriver; otherwise the mode must be listed (an absent list
      // means Persistent only).
      if (mode === 'Ephemeral' && !spec)
        throw new CsiVolumeError(
          'FailedPrecondition',
          'prepare',
          `volume mode "Ephemeral" not supported by driver ${driver} (no CSIDriver object)`,
        );
      const modes = spec?.volumeLifecycleModes ?? ['Persistent'];
      if (!modes.includes(mode))
        throw new CsiVolumeError(
          'FailedPrecondition',
          'prepare',
          `volume mode "${mode}" not supported by driver ${driver} (only supports ${JSON.stringify(modes)})`,
        );
    },

    async secrets(ref, namespace, step, signal) {
      if (!ref) return {};
      const ns = ref.namespace ?? namespace;
      if (!opts.getSecret)
        throw new CsiVolumeError(
          'FailedPrecondition',
          step,
          `fetching secret ${ns}/${ref.name} failed: no API client (standalone)`,
        );
      const data = await opts
        .getSecret(ns, ref.name, signal)
        .catch(wrap(step, `fetching secret ${ns}/${ref.name} failed`));
      if (!data)
        throw new CsiVolumeError('NotFound', step, `fetching secret ${ns}/${ref.name} failed: not found`);
      return data;
    },

    async publishContext(spec, handle, driver, signal) {
      if (spec?.attachRequired === false || !opts.getVolumeAttachment) return {};
      const name = attachmentName(handle, driver, opts.nodeName);
      const va = await opts
        .getVolumeAttachment(name, signal)
        .catch(wrap('prepare', `failed to fetch VolumeAttachment ${name}`));
      if (!va)
        throw new CsiVolumeError(
          'Unavailable',
          'prepare',
          `volumeattachments.storage.k8s.io "${name}" not found`,
        );
      if (!va.attached)
        throw new CsiVolumeError(
          'Unavailable',
          'prepare',
          `volume ${handle} is not yet attached (VolumeAttachment ${name})`,
        );
      return va.attachmentMetadata ?? {};
    },
  };
}
