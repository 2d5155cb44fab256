/**
 * The test bed: a private containerd (CRI + CNI bridge) with the local busybox and pause images.
 * Tests run one file at a time and share it; each file calls `startContainerd()` and
 * `removeAllPods()` to begin clean, and `stop()` at the end (a no-op when it reused an instance).
 */
import type { Logger } from '../../src/util/logger.ts';
import { createLogger, nullLogger } from '../../src/util/logger.ts';
import { KubeletError, describeError } from '../../src/util/errors.ts';
import { BED_PATHS, BED_POD_SUBNET, ensureContainerd, terminate } from './containerd.ts';
import { run } from './exec.ts';
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

/**
 * containerd 1.6 keeps the (stopped) task of a container whose StartContainer was cancelled, e.g.
 * by a kubelet SIGKILLed mid-start, and then refuses RemoveContainer for good with "cannot delete
 * running task <id>" (containerd#11037): no CRI call can clear it. containerd's own client can.
 */
const STALE_TASK = /cannot delete running task ([0-9a-f]{64})/g;

async function deleteStaleTasks(bed: ContainerdBed, message: string): Promise<string[]> {
  const ids = [...new Set([...message.matchAll(STALE_TASK)].map((m) => m[1] ?? ''))];
  for (const id of ids) {
    await run('ctr', ['--address', bed.socket, '--namespace', 'k8s.io', 'tasks', 'delete', '--force', id], {
      timeoutMs: 30_000,
    });
  }
  return ids;
}

/** containerd's answer for a sandbox whose shim connection is gone. */
const SHIM_GONE = /ttrpc: closed/;
const SHIM_GONE_WAIT_MS = 30_000;

async function retryWhileShimGone(remove: () => Promise<void>): Promise<void> {
  const until = Date.now() + SHIM_GONE_WAIT_MS;
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    try {
      await remove();
      return;
    } catch (err) {
      if (!SHIM_GONE.test(describeError(err)) || Date.now() >= until) throw err;
    }
  }
}

/**
 * Removes every CRI pod sandbox (stop + remove) in the bed's containerd, so a test starts clean.
 * A sandbox that containerd's stale-task defect pins is freed with `ctr tasks delete` (logged) and
 * removed again; any other failure is reported.
 */
export async function removeAllPods(
  bed: ContainerdBed,
  logger: Logger = createLogger({ verbosity: 0, format: 'text' }),
): Promise<void> {
  const sandboxes = await listPodSandboxes(bed.socket);
  const failures: string[] = [];
  for (const sb of sandboxes) {
    const remove = async () => {
      await stopPodSandbox(bed.socket, sb.id);
      await removePodSandbox(bed.socket, sb.id);
    };
    try {
      try {
        await remove();
      } catch (err) {
        if (SHIM_GONE.test(describeError(err))) {
          // The shim's connection closed under the call: the shim was exiting (e.g. a kubelet
          // stopped mid-StopPodSandbox, cancelling it, while containerd tore the task down). A
          // shim that is simply dead is handled at once (tried: stop answers in ~0.1 s), so this
          // is transient: retried every 0.5 s, never longer than SHIM_GONE_WAIT_MS.
          logger.warn('the sandbox shim connection closed under the call; retrying', {
            pod: `${sb.namespace}/${sb.name}`,
            error: describeError(err),
          });
          await retryWhileShimGone(remove);
          continue;
        }
        const freed = await deleteStaleTasks(bed, describeError(err));
        if (freed.length === 0) throw err;
        logger.warn(
          'containerd kept stopped tasks that CRI cannot remove (containerd#11037); deleted them with ctr',
          {
            pod: `${sb.namespace}/${sb.name}`,
            tasks: freed,
          },
        );
        await remove();
      }
    } catch (err) {
      failures.push(`${sb.namespace}/${sb.name} (${sb.id.slice(0, 12)}): ${describeError(err)}`);
    }
  }
  if (failures.length > 0) {
    throw new KubeletError('Internal', 'remove all bed pods', failures.join('; '));
  }
}
