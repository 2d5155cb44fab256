/**
 * The test bed: a private containerd (CRI + CNI bridge) with the local busybox and pause images.
 * Tests run one file at a time and share it; each file calls `startContainerd()` and
 * `removeAllPods()` to begin clean, and `stop()` at the end (a no-op when it reused an instance).
 */
import type { Logger } from '../../src/util/logger.ts';
import { nullLogger } from '../../src/util/logger.ts';
import { KubeletError, describeError } from '../../src/util/errors.ts';
import { BED_PATHS, BED_POD_SUBNET, ensureContainerd, terminate } from './containerd.ts';
import { ensureImages } from './images.ts';
import { listPodSandboxes, removePodSandbox, stopPodSandbox } from './cri-mini.ts';

export { BUSYBOX_IMAGE, PAUSE_IMAGE, BED_IMAGES, buildImage, listImages } from './images.ts';
export type { BuiltImage, ImageSpec } from './images.ts';
export {
  BED_PATHS,
  BED_POD_SUBNET,
  BED_BRIDGE,
  BED_CNI_NETWORK,
  BED_REGISTRY_MIRROR,
  BED_SECOND_RUNTIME_HANDLER,
  criAnswers,
  stopBedContainerd,
} from './containerd.ts';

export {
  bootNodeVm,
  ensureNodeVmImage,
  NODE_VM_PATHS,
  CHECKOUT,
  type NodeVm,
  type NodeVmOptions,
  type NodeVmShare,
  type NodeVmImage,
  type GuestResult,
  type GuestRunOptions,
} from './node-vm.ts';
export {
  guestKubeconfig,
  importBedImages,
  installGuestUnit,
  writeGuestFiles,
  type GuestUnit,
} from './node-vm-guest.ts';

export interface ContainerdBed {
  /** e.g. /run/tskubelet-bed/containerd.sock */
  socket: string;
  /** `unix://` + socket */
  endpoint: string;
  /** CNI subnet, e.g. '10.88.0.0/16' */
  podSubnet: string;
  /** Stops containerd if this call started it (no-op if it was already running); idempotent. */
  stop(): Promise<void>;
}

/** Starts (or reuses, if its socket already answers) the private containerd; ensures both images are imported. */
export async function startContainerd(opts: { logger?: Logger } = {}): Promise<ContainerdBed> {
  const logger = opts.logger ?? nullLogger;
  const proc = await ensureContainerd(logger);
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    if (!proc.started || proc.pid === undefined) return Promise.resolve();
    const pid = proc.pid;
    stopped ??= terminate(pid, logger).then(() =>
      logger.info('stopped bed containerd', { containerdPid: pid }),
    );
    return stopped;
  };
  try {
    await ensureImages(BED_PATHS.socket, logger);
  } catch (err) {
    await stop().catch((stopErr: unknown) =>
      logger.error('cannot stop bed containerd after a failed image import', { err: describeError(stopErr) }),
    );
    throw err;
  }
  return {
    socket: BED_PATHS.socket,
    endpoint: `unix://${BED_PATHS.socket}`,
    podSubnet: BED_POD_SUBNET,
    stop,
  };
}

/** Removes every CRI pod sandbox (stop + remove) in the bed's containerd, so a test starts clean. */
export async function removeAllPods(bed: ContainerdBed): Promise<void> {
  const sandboxes = await listPodSandboxes(bed.socket);
  const failures: string[] = [];
  for (const sb of sandboxes) {
    try {
      await stopPodSandbox(bed.socket, sb.id);
      await removePodSandbox(bed.socket, sb.id);
    } catch (err) {
      failures.push(`${sb.namespace}/${sb.name} (${sb.id.slice(0, 12)}): ${describeError(err)}`);
    }
  }
  if (failures.length > 0) {
    throw new KubeletError('Internal', 'remove all bed pods', failures.join('; '));
  }
}
