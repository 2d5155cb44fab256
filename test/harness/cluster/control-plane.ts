/**
 * The control-plane components of the cluster bed: their command lines, health checks, and
 * `ensureComponent`, which reuses a healthy instance, replaces one whose flags changed or that
 * never becomes healthy, and otherwise starts a fresh one and waits for it. The certificates they
 * start with are pki.ts's.
 */
export { ensurePki, pkiPaths, SERVER, type ClusterPki } from './pki.ts';
import { mkdir, rename } from 'node:fs/promises';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { parseGoDuration } from '../../../src/config/duration.ts';
import { abortReason, sleep } from '../../../src/util/abort.ts';
import { FRONT_PROXY_CLIENT, SERVER, type ClusterPki } from './pki.ts';
import { answers200, httpCall } from './client.ts';
import type { DaemonSpec } from './daemon.ts';
import {
  findDaemon,
  logTail,
  portInUse,
  portOwner,
  processAgeMs,
  running,
  spawnDaemon,
  terminate,
} from './daemon.ts';
import type { ComponentName } from './paths.ts';
import {
  CLUSTER_HOST,
  CLUSTER_NAME,
  CLUSTER_PATHS,
  CLUSTER_PORTS,
  SERVICE_ACCOUNT_ISSUER,
  SERVICE_CLUSTER_IP_RANGE,
  logFile,
  pidFile,
} from './paths.ts';

const ETCD_URL = `http://${CLUSTER_HOST}:${CLUSTER_PORTS.etcdClient}`;
const ETCD_PEER_URL = `http://${CLUSTER_HOST}:${CLUSTER_PORTS.etcdPeer}`;

const START_TIMEOUT_MS: Record<ComponentName, number> = {
  etcd: 30_000,
  'kube-apiserver': 120_000,
  'kube-controller-manager': 60_000,
  'kube-scheduler': 60_000,
};

/**
 * Component settings a caller of startCluster may choose. A running component whose command line
 * differs is restarted with the new one (ensureComponent), so a test that sets one leaves it set for
 * whoever comes next until a start without it.
 */
export interface ControlPlaneOptions {
  /**
   * kube-controller-manager --cluster-signing-duration (default 8760h): the lifetime of the
   * certificates its CSR signer issues. The signer backdates NotBefore by 5 minutes
   * (pkg/controller/certificates/signer/ca_provider.go: Backdate), so an issued certificate expires
   * `duration - 5m` after issue, and a kubelet renews it after 70-90% of `duration` from NotBefore.
   */
  clusterSigningDuration?: string;
}

/** The signer backdates by 5 minutes: a shorter duration issues certificates that have expired. */
const MIN_SIGNING_DURATION_MS = 6 * 60_000;

/** Throws on a signing duration that is not a Go duration or too short to be usable. */
export function checkControlPlaneOptions(opts: ControlPlaneOptions): void {
  if (opts.clusterSigningDuration === undefined) return;
  const ms = parseGoDuration(opts.clusterSigningDuration, 'clusterSigningDuration');
  if (ms < MIN_SIGNING_DURATION_MS) {
    throw new KubeletError(
      'InvalidArgument',
      'cluster bed options',
      `clusterSigningDuration ${opts.clusterSigningDuration} is below 6m: the signer backdates certificates by 5m`,
    );
  }
}

function binary(name: Exclude<ComponentName, 'etcd'>): string {
  return `${CLUSTER_PATHS.binDir}/${name}`;
}

/**
 * The flags kube-controller-manager and kube-scheduler share: their kubeconfig (also for delegated
 * authn/authz), a loopback secure port for health, no insecure port, no leader election. The
 * kubeconfig flag doubles as the marker that finds a running instance.
 */
function kubeconfigComponentArgs(
  name: ComponentName,
  kubeconfig: string,
  port: number,
  extra: string[],
): { marker: string; args: string[] } {
  const marker = `--kubeconfig=${kubeconfig}`;
  return {
    marker,
    args: [
      marker,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      `--bind-address=${CLUSTER_HOST}`,
      `--secure-port=${port}`,
      '--port=0',
      ...extra,
      '--leader-elect=false',
      `--cert-dir=${CLUSTER_PATHS.componentCertDir}/${name}`,
      '--v=2',
    ],
  };
}

/** The command line of each component. The first flag named in `marker` identifies the bed's instance. */
export function componentSpec(
  name: ComponentName,
  pki: ClusterPki,
  options: ControlPlaneOptions = {},
): DaemonSpec {
  const common = { name, pidFile: pidFile(name), log: logFile(name) };
  switch (name) {
    case 'etcd': {
      const marker = `--data-dir=${CLUSTER_PATHS.etcdData}`;
      return {
        ...common,
        binary: 'etcd',
        marker,
        args: [
          `--name=${CLUSTER_NAME}`,
          marker,
          `--listen-client-urls=${ETCD_URL}`,
          `--advertise-client-urls=${ETCD_URL}`,
          `--listen-peer-urls=${ETCD_PEER_URL}`,
          `--initial-advertise-peer-urls=${ETCD_PEER_URL}`,
          `--initial-cluster=${CLUSTER_NAME}=${ETCD_PEER_URL}`,
          '--initial-cluster-state=new',
          `--initial-cluster-token=${CLUSTER_NAME}`,
          '--logger=zap',
          '--log-outputs=stderr',
        ],
      };
    }
    case 'kube-apiserver': {
      const marker = `--tls-cert-file=${pki.apiserver.cert}`;
      return {
        ...common,
        // It stops listening at once on SIGTERM, then waits up to a minute for open watches to end;
        // everything it holds is in etcd, so a short grace keeps restarts (outage tests) quick.
        stopGraceMs: 3_000,
        binary: binary(name),
        marker,
        args: [
          marker,
          `--tls-private-key-file=${pki.apiserver.key}`,
          `--client-ca-file=${pki.ca.cert}`,
          `--bind-address=${CLUSTER_HOST}`,
          `--advertise-address=${CLUSTER_HOST}`,
          `--secure-port=${CLUSTER_PORTS.apiserver}`,
          '--insecure-port=0',
          `--etcd-servers=${ETCD_URL}`,
          `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
          '--authorization-mode=Node,RBAC',
          // kubeadm join's bootstrap tokens (test/harness/kubeadm); nothing else presents one.
          '--enable-bootstrap-token-auth=true',
          '--enable-admission-plugins=NodeRestriction',
          '--allow-privileged=true',
          `--service-account-key-file=${pki.serviceAccount.pub}`,
          `--service-account-signing-key-file=${pki.serviceAccount.key}`,
          `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
          `--kubelet-client-certificate=${pki.apiserverKubeletClient.cert}`,
          `--kubelet-client-key=${pki.apiserverKubeletClient.key}`,
          `--requestheader-client-ca-file=${pki.frontProxyCa.cert}`,
          `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
          '--requestheader-username-headers=X-Remote-User',
          '--requestheader-group-headers=X-Remote-Group',
          '--requestheader-extra-headers-prefix=X-Remote-Extra-',
          `--proxy-client-cert-file=${pki.frontProxyClient.cert}`,
          `--proxy-client-key-file=${pki.frontProxyClient.key}`,
          // Reach kubelets by the address they report first: the bed's host names may not resolve.
          '--kubelet-preferred-address-types=InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP',
          // The `kubernetes` Endpoints would name 127.0.0.1, which Endpoints validation rejects
          // (loopback); nothing in the bed reaches the apiserver through the service anyway.
          '--endpoint-reconciler-type=none',
          `--cert-dir=${CLUSTER_PATHS.componentCertDir}/kube-apiserver`,
          '--v=2',
        ],
      };
    }
    case 'kube-controller-manager':
      return {
        ...common,
        binary: binary(name),
        ...kubeconfigComponentArgs(
          name,
          CLUSTER_PATHS.controllerManagerKubeconfig,
          CLUSTER_PORTS.controllerManager,
          [
            // The default set plus the two kubeadm clusters run: bootstrapsigner signs cluster-info with
            // each bootstrap token (kubeadm join's discovery), tokencleaner removes expired tokens.
            '--controllers=*,bootstrapsigner,tokencleaner',
            // Not --use-service-account-credentials: with it, 1.20 exits (klog.Fatal in its dynamic client
            // builder) when the apiserver is unreachable while it is still starting controllers, so an
            // outage test right after a start would kill it. Every controller uses this identity instead.
            '--use-service-account-credentials=false',
            `--service-account-private-key-file=${pki.serviceAccount.key}`,
            `--root-ca-file=${pki.ca.cert}`,
            `--cluster-signing-cert-file=${pki.ca.cert}`,
            `--cluster-signing-key-file=${pki.ca.key}`,
            `--cluster-name=${CLUSTER_NAME}`,
            ...(options.clusterSigningDuration !== undefined
              ? [`--cluster-signing-duration=${options.clusterSigningDuration}`]
              : []),
          ],
        ),
      };
    case 'kube-scheduler':
      return {
        ...common,
        binary: binary(name),
        ...kubeconfigComponentArgs(name, CLUSTER_PATHS.schedulerKubeconfig, CLUSTER_PORTS.scheduler, []),
      };
  }
}

/** The loopback ports a component listens on (checked free before it is spawned). */
function componentPorts(name: ComponentName): number[] {
  switch (name) {
    case 'etcd':
      return [CLUSTER_PORTS.etcdClient, CLUSTER_PORTS.etcdPeer];
    case 'kube-apiserver':
      return [CLUSTER_PORTS.apiserver];
    case 'kube-controller-manager':
      return [CLUSTER_PORTS.controllerManager];
    case 'kube-scheduler':
      return [CLUSTER_PORTS.scheduler];
  }
}

/** One health probe: etcd `/health`, the apiserver's `/readyz` (as admin), the others' `/healthz`. */
export function componentHealthy(name: ComponentName, pki: ClusterPki): Promise<boolean> {
  switch (name) {
    case 'etcd':
      return answers200(`${ETCD_URL}/health`);
    case 'kube-apiserver':
      return answers200(`${SERVER}/readyz`, { caFile: pki.ca.cert, client: pki.admin });
    case 'kube-controller-manager':
      return answers200(`https://${CLUSTER_HOST}:${CLUSTER_PORTS.controllerManager}/healthz`, {
        insecure: true,
      });
    case 'kube-scheduler':
      return answers200(`https://${CLUSTER_HOST}:${CLUSTER_PORTS.scheduler}/healthz`, { insecure: true });
  }
}

export interface ComponentProcess {
  /**
   * Whether this call brought it up from nothing (false: a healthy instance was reused, or a running
   * one was replaced, whose owner keeps owning it).
   */
  started: boolean;
  pid: number | undefined;
}

function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Polls health until it answers (true), the process dies or the timeout passes (false). */
async function waitHealthy(
  name: ComponentName,
  pki: ClusterPki,
  pid: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ healthy: boolean; died: boolean }> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (signal?.aborted) throw abortReason(signal);
    if (await componentHealthy(name, pki)) return { healthy: true, died: false };
    if (!(await running(pid))) return { healthy: false, died: true };
    await sleep(200, signal);
  }
  return { healthy: false, died: false };
}

/**
 * How long a port may stay taken after the bed's own instance was stopped: `running()` sees a Go
 * process's main thread as a zombie while its other threads still tear down and hold its sockets.
 */
const PORT_RELEASE_MS = 5_000;

async function ensurePortsFree(name: ComponentName): Promise<void> {
  for (const port of componentPorts(name)) {
    const deadline = Date.now() + PORT_RELEASE_MS;
    while ((await portInUse(port)) && Date.now() < deadline) await sleep(100);
    if (await portInUse(port)) {
      const owner = await portOwner(port);
      throw new KubeletError(
        'FailedPrecondition',
        `start ${name}`,
        `port ${CLUSTER_HOST}:${port} is taken by a process that is not the bed's ${name}: ${owner || 'unknown owner'}`,
      );
    }
  }
}

async function spawnAndWait(
  name: ComponentName,
  spec: DaemonSpec,
  pki: ClusterPki,
  logger: Logger,
  signal?: AbortSignal,
): Promise<{ pid: number; healthy: boolean; died: boolean }> {
  await ensurePortsFree(name);
  const pid = await spawnDaemon(spec, logger);
  try {
    const result = await waitHealthy(name, pki, pid, START_TIMEOUT_MS[name], signal);
    if (!result.healthy && !result.died) await terminate(pid, name, logger, spec.stopGraceMs);
    return { pid, ...result };
  } catch (err) {
    // Aborted while waiting: do not leave a half-started daemon behind.
    await terminate(pid, name, logger, spec.stopGraceMs).catch((stopErr: unknown) =>
      logger.error(`cannot stop ${name} after an aborted start`, { pid, err: describeError(stopErr) }),
    );
    throw err;
  }
}

/**
 * Makes sure the bed's `name` runs with the wanted flags and is healthy: reuses it, replaces it
 * (flags changed, or never became healthy), or starts it. A dead etcd that cannot start again on
 * its data dir gets a fresh one (the old dir is kept beside it): the bed's data is disposable.
 */
export async function ensureComponent(
  name: ComponentName,
  pki: ClusterPki,
  logger: Logger,
  opts: { signal?: AbortSignal; restart?: boolean; options?: ControlPlaneOptions } = {},
): Promise<ComponentProcess> {
  const { signal } = opts;
  const spec = componentSpec(name, pki, opts.options);
  const found = await findDaemon(spec);
  const replaced = found !== undefined;
  if (found !== undefined) {
    if (!sameArgs(found.args, spec.args) || opts.restart) {
      logger.info(`${name} runs with other flags or certificates; restarting it`, { pid: found.pid });
      await terminate(found.pid, name, logger, spec.stopGraceMs);
    } else {
      // One still starting gets its full start timeout; one that ran for longer only a short grace.
      const age = (await processAgeMs(found.pid)) ?? 0;
      const grace = Math.max(3_000, START_TIMEOUT_MS[name] - age);
      const { healthy } = await waitHealthy(name, pki, found.pid, grace, signal);
      if (healthy) {
        logger.debug(`reusing running ${name}`, { pid: found.pid });
        return { started: false, pid: found.pid };
      }
      logger.warn(`${name} runs but is not healthy; replacing it`, { pid: found.pid, log: spec.log });
      await terminate(found.pid, name, logger, spec.stopGraceMs);
    }
  } else if (await componentHealthy(name, pki)) {
    // Healthy, with the bed's certificates, yet no process of ours found (another pid namespace?).
    logger.warn(`${name} answers but its process is not found; reusing it as is`, {});
    return { started: false, pid: undefined };
  }

  if (name === 'etcd') await mkdir(CLUSTER_PATHS.etcdData, { recursive: true, mode: 0o700 });
  let result = await spawnAndWait(name, spec, pki, logger, signal);
  if (!result.healthy && result.died && name === 'etcd') {
    const aside = `${CLUSTER_PATHS.etcdData}.broken-${Date.now()}`;
    logger.warn('etcd exited at start; retrying once on a fresh data dir', { aside, log: spec.log });
    await rename(CLUSTER_PATHS.etcdData, aside);
    await mkdir(CLUSTER_PATHS.etcdData, { recursive: true, mode: 0o700 });
    result = await spawnAndWait(name, spec, pki, logger, signal);
  }
  if (!result.healthy) {
    throw new KubeletError(
      'Unavailable',
      `start ${name}`,
      `${result.died ? 'exited' : `not healthy within ${START_TIMEOUT_MS[name]} ms`}; log: ${spec.log}\n` +
        (await logTail(spec.log)),
    );
  }
  return { started: !replaced, pid: result.pid };
}

/**
 * Waits until the controller-manager has made the `default` ServiceAccount in `default` and
 * attached its token secret: before that, the ServiceAccount admission plugin rejects pods.
 */
export async function waitForDefaultServiceAccount(
  pki: ClusterPki,
  logger: Logger,
  timeoutMs = 120_000,
  signal?: AbortSignal,
): Promise<void> {
  const url = `${SERVER}/api/v1/namespaces/default/serviceaccounts/default`;
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    try {
      const res = await httpCall(url, { tls: { caFile: pki.ca.cert, client: pki.admin }, signal });
      if (res.status === 200) {
        const sa = JSON.parse(res.body) as { secrets?: unknown[] };
        if ((sa.secrets?.length ?? 0) > 0) return;
        last = 'exists, no token secret yet';
      } else {
        last = `HTTP ${res.status}`;
      }
    } catch (err) {
      if (signal?.aborted) throw abortReason(signal);
      last = describeError(err);
    }
    logger.debug('waiting for the default service account', { last });
    await sleep(250, signal);
  }
  throw new KubeletError(
    'DeadlineExceeded',
    'wait for default/default service account',
    `not ready within ${timeoutMs} ms (${last}); is kube-controller-manager running? log: ${logFile('kube-controller-manager')}`,
  );
}
