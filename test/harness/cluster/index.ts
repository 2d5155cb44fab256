/**
 * The cluster bed: etcd + kube-apiserver 1.20.2 (+ controller-manager and scheduler by default) on
 * loopback, with a CA and client certificates for an admin, the components and any number of nodes.
 * Like the containerd bed it is shared: `startCluster()` reuses healthy running components (e.g. from
 * `node test/harness/bed.ts cluster-up`) and `stop()` stops only what that call started.
 *
 *   export KUBECONFIG=/var/lib/tskubelet-bed/cluster/admin.kubeconfig   # kubectl against the bed
 */
import { mkdir, open, readFile, readdir, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { nullLogger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { abortReason, sleep } from '../../../src/util/abort.ts';
import { ensureKubernetesBinaries } from './build.ts';
import { ensureCert } from './certs.ts';
import type { ClusterPki, ComponentProcess, ControlPlaneOptions } from './control-plane.ts';
import {
  SERVER,
  checkControlPlaneOptions,
  componentHealthy,
  componentSpec,
  ensureComponent,
  ensurePki,
  pkiPaths,
  waitForDefaultServiceAccount,
} from './control-plane.ts';
import { findDaemon, running, stopDaemon } from './daemon.ts';
import { writeKubeconfig } from './kubeconfig.ts';
import type { ComponentName } from './paths.ts';
import { CLUSTER_PATHS, COMPONENTS, logFile } from './paths.ts';

export {
  CLUSTER_PATHS,
  CLUSTER_PORTS,
  KUBERNETES_VERSION,
  NODE_VM_HOST_ADDRESS,
  SERVICE_CLUSTER_IP_RANGE,
  COMPONENTS,
} from './paths.ts';
export type { ComponentName } from './paths.ts';
export { KUBERNETES_BINARIES, ensureKubernetesBinaries, kubernetesBinary } from './build.ts';
export type { KubernetesBinary } from './build.ts';

export interface ClusterBed {
  /** https://127.0.0.1:<port> */
  server: string;
  /** Path of a kubeconfig for user `admin` in group `system:masters` (cluster-admin). */
  adminKubeconfig: string;
  /** The CA that signed the apiserver's serving cert and every client cert. */
  caFile: string;
  /**
   * Writes (idempotently) a kubeconfig with a client cert CN=system:node:<nodeName>, O=system:nodes,
   * so the Node authorizer and NodeRestriction treat its holder as that node. Returns its path.
   */
  kubeletKubeconfig(nodeName: string): Promise<string>;
  /** Restarts only kube-apiserver (tests of API outages); resolves when it answers /readyz again. */
  restartApiserver(opts?: { downMs?: number }): Promise<void>;
  /** Stops kube-apiserver (whoever started it); etcd and the other components keep running. */
  stopApiserver(): Promise<void>;
  /**
   * Starts kube-apiserver if it is not running (and any other component of this bed that died
   * meanwhile); resolves when it answers /readyz.
   */
  startApiserver(): Promise<void>;
  /** Stops the components this `startCluster` call started (none when it reused a running bed); idempotent. */
  stop(): Promise<void>;
}

export interface StartClusterOptions {
  logger?: Logger;
  /** Start kube-scheduler (default true). False does not stop one that already runs. */
  withScheduler?: boolean;
  /**
   * Start kube-controller-manager (default true) and wait for the `default` ServiceAccount and its
   * token, without which the ServiceAccount admission plugin rejects pods. False does not stop a running one.
   */
  withControllerManager?: boolean;
  /** Aborts the start (a build in progress included); not used after startCluster resolves. */
  signal?: AbortSignal;
  /**
   * kube-controller-manager --cluster-signing-duration, e.g. `10m` so a kubelet's client certificate
   * rotates within minutes (see ControlPlaneOptions). Unset: upstream's one year. A running
   * controller-manager with another value is restarted (and is again by the next start without it).
   */
  clusterSigningDuration?: string;
}

const LOCK_WAIT_MS = 5 * 60_000;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Serialises starts across processes (e.g. `bed.ts cluster-up` while a test starts the bed). */
async function withStartLock<T>(
  logger: Logger,
  signal: AbortSignal | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  await mkdir(CLUSTER_PATHS.run, { recursive: true });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    if (signal?.aborted) throw abortReason(signal);
    try {
      const fh = await open(CLUSTER_PATHS.lock, 'wx');
      await fh.write(`${process.pid}\n`);
      await fh.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number.parseInt((await readFile(CLUSTER_PATHS.lock, 'utf8').catch(() => '')).trim(), 10);
    if (!Number.isInteger(holder) || !(await running(holder))) {
      logger.info('removing stale cluster bed start lock', { holder, lock: CLUSTER_PATHS.lock });
      await unlink(CLUSTER_PATHS.lock).catch((err: unknown) =>
        logger.debug('stale lock already gone', { err: describeError(err) }),
      );
      continue;
    }
    if (Date.now() > deadline) {
      throw new KubeletError(
        'DeadlineExceeded',
        'start cluster bed',
        `pid ${holder} has held ${CLUSTER_PATHS.lock} for over ${LOCK_WAIT_MS} ms`,
      );
    }
    await sleep(200, signal);
  }
  try {
    return await fn();
  } finally {
    const holder = (await readFile(CLUSTER_PATHS.lock, 'utf8').catch(() => '')).trim();
    if (holder === String(process.pid)) await unlink(CLUSTER_PATHS.lock);
  }
}

/**
 * After a new CA or service-account key: stops every running component and empties etcd, whose
 * token secrets and CA bundles were made with the old ones. A no-op on a machine's first start.
 */
async function resetState(pki: ClusterPki, logger: Logger): Promise<void> {
  const running: ComponentName[] = [];
  for (const name of COMPONENTS)
    if ((await findDaemon(componentSpec(name, pki))) !== undefined) running.push(name);
  const hasData = (await readdir(CLUSTER_PATHS.etcdData).catch(() => [])).length > 0;
  if (running.length === 0 && !hasData) return;
  logger.warn('new cluster bed CA or service-account key: resetting the bed (stopping it, emptying etcd)', {
    running,
    etcdData: CLUSTER_PATHS.etcdData,
  });
  for (const name of [...COMPONENTS].reverse()) await stopDaemon(componentSpec(name, pki), logger);
  await rm(CLUSTER_PATHS.etcdData, { recursive: true, force: true });
}

/**
 * Starts (or reuses) the cluster bed: builds the Kubernetes binaries first if they are missing
 * (~8 minutes, once per machine), makes the TLS material, then ensures etcd, kube-apiserver and,
 * unless disabled, kube-controller-manager and kube-scheduler, each healthy. Must run as root.
 */
export async function startCluster(opts: StartClusterOptions = {}): Promise<ClusterBed> {
  const logger = opts.logger ?? nullLogger;
  const { signal } = opts;
  const withControllerManager = opts.withControllerManager ?? true;
  const withScheduler = opts.withScheduler ?? true;
  const options: ControlPlaneOptions =
    opts.clusterSigningDuration !== undefined ? { clusterSigningDuration: opts.clusterSigningDuration } : {};
  checkControlPlaneOptions(options);
  if (process.getuid?.() !== 0) {
    throw new KubeletError('PermissionDenied', 'start cluster bed', 'the test bed must run as root');
  }
  await ensureKubernetesBinaries(logger, signal);
  for (const d of [CLUSTER_PATHS.state, CLUSTER_PATHS.run, CLUSTER_PATHS.logDir]) {
    await mkdir(d, { recursive: true });
  }

  const wanted = COMPONENTS.filter(
    (c) =>
      (c !== 'kube-controller-manager' || withControllerManager) && (c !== 'kube-scheduler' || withScheduler),
  );
  // What this call started (and so stops): components that were not running before it.
  const owned = new Set<ComponentName>();
  const stopOwned = async (): Promise<void> => {
    const pki = pkiPaths();
    const failures: string[] = [];
    for (const name of [...COMPONENTS].reverse()) {
      if (!owned.has(name)) continue;
      try {
        await stopDaemon(componentSpec(name, pki), logger);
        owned.delete(name);
      } catch (err) {
        failures.push(`${name}: ${describeError(err)}`);
      }
    }
    if (failures.length > 0) throw new KubeletError('Internal', 'stop cluster bed', failures.join('; '));
  };

  let pki: ClusterPki;
  try {
    pki = await withStartLock(logger, signal, async () => {
      const { pki, changed, identityChanged } = await ensurePki(logger);
      if (identityChanged) await resetState(pki, logger);
      for (const name of wanted) {
        const proc: ComponentProcess = await ensureComponent(name, pki, logger, {
          signal,
          options,
          // New certificates: components that hold the old ones in memory must pick them up.
          restart: changed && name !== 'etcd',
        });
        if (proc.started) owned.add(name);
      }
      return pki;
    });
    if (withControllerManager) await waitForDefaultServiceAccount(pki, logger, 120_000, signal);
  } catch (err) {
    await stopOwned().catch((stopErr: unknown) =>
      logger.error('cannot stop the cluster bed after a failed start', { err: describeError(stopErr) }),
    );
    throw err;
  }
  logger.info('cluster bed ready', {
    server: SERVER,
    kubectl: `export KUBECONFIG=${CLUSTER_PATHS.adminKubeconfig}`,
    started: [...owned],
  });

  // A stop and start here leave ownership as startCluster found it: stop() stops the apiserver only if
  // startCluster started it, and then whichever instance runs at that time.
  const apiserverSpec = componentSpec('kube-apiserver', pki);
  const stopApiserver = async (): Promise<void> => {
    await stopDaemon(apiserverSpec, logger);
  };
  const startApiserver = async (): Promise<void> => {
    // The others too: one that died meanwhile (etcd killed by a test, a controller-manager that
    // exited during the outage) comes back; healthy ones are only probed.
    for (const name of wanted) {
      const proc = await ensureComponent(name, pki, logger, { options });
      if (proc.started && name !== 'kube-apiserver') {
        logger.warn(`${name} was not running after the apiserver outage; started it again`, {
          pid: proc.pid,
        });
      }
    }
  };
  let stopped: Promise<void> | undefined;

  return {
    server: SERVER,
    adminKubeconfig: CLUSTER_PATHS.adminKubeconfig,
    caFile: pki.ca.cert,
    async kubeletKubeconfig(nodeName: string): Promise<string> {
      if (nodeName.length > 253 || !DNS_SUBDOMAIN.test(nodeName)) {
        throw new KubeletError(
          'InvalidArgument',
          'kubelet kubeconfig',
          `${JSON.stringify(nodeName)} is not a node name`,
        );
      }
      const client = await ensureCert(
        pki.ca,
        CLUSTER_PATHS.nodePki,
        {
          name: nodeName,
          commonName: `system:node:${nodeName}`,
          organizations: ['system:nodes'],
          usage: 'client',
        },
        logger,
      );
      return writeKubeconfig(join(CLUSTER_PATHS.kubeletKubeconfigDir, `${nodeName}.kubeconfig`), {
        server: SERVER,
        caFile: pki.ca.cert,
        user: `system:node:${nodeName}`,
        client,
      });
    },
    async restartApiserver(restartOpts: { downMs?: number } = {}): Promise<void> {
      await stopApiserver();
      if (restartOpts.downMs !== undefined && restartOpts.downMs > 0) await sleep(restartOpts.downMs);
      await startApiserver();
    },
    stopApiserver,
    startApiserver,
    stop(): Promise<void> {
      stopped ??= stopOwned();
      return stopped;
    },
  };
}

export interface ComponentStatus {
  name: ComponentName;
  pid: number | undefined;
  healthy: boolean;
  log: string;
}

/** Each component's pid (if the bed's instance runs) and health. Creates nothing. */
export async function clusterStatus(): Promise<ComponentStatus[]> {
  const pki = pkiPaths();
  const out: ComponentStatus[] = [];
  for (const name of COMPONENTS) {
    const found = await findDaemon(componentSpec(name, pki));
    out.push({ name, pid: found?.pid, healthy: await componentHealthy(name, pki), log: logFile(name) });
  }
  return out;
}

/** Stops every running component of the bed, whoever started it; returns the names stopped. */
export async function stopCluster(logger: Logger = nullLogger): Promise<ComponentName[]> {
  const pki = pkiPaths();
  const stoppedNames: ComponentName[] = [];
  for (const name of [...COMPONENTS].reverse()) {
    if ((await stopDaemon(componentSpec(name, pki), logger)) !== undefined) stoppedNames.push(name);
  }
  return stoppedNames;
}
