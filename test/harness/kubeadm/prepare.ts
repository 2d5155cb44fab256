/**
 * Leaves the cluster bed's running control plane as `kubeadm init` would for joining nodes, without
 * re-creating it: kubeadm's own phases, run against the bed's API server with the admin kubeconfig.
 * - `kubeadm init phase bootstrap-token`: the token Secret in kube-system, the RBAC kubeadm:get-nodes,
 *   kubeadm:kubelet-bootstrap, kubeadm:node-autoapprove-bootstrap and
 *   kubeadm:node-autoapprove-certificate-rotation, the cluster-info ConfigMap in kube-public (from
 *   the admin kubeconfig's cluster) and its Role/RoleBinding for anonymous reads.
 * - `kubeadm init phase upload-config kubeadm`: the kubeadm-config ConfigMap and its Role for nodes.
 * - `kubeadm init phase upload-config kubelet`: kubelet-config-1.20 and its Role for nodes.
 * The token's JWS signature in cluster-info comes from the controller-manager's bootstrapsigner
 * controller, and the token authenticates only with the API server's --enable-bootstrap-token-auth:
 * both are on in the bed's control-plane.ts. Upstream: cmd/kubeadm/app/cmd/phases/init/bootstraptoken.go
 * and uploadconfig.go (kubeadm 1.20).
 */
import { mkdir, readFile, writeFile, appendFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import { abortReason, sleep } from '../../../src/util/abort.ts';
import { run } from '../exec.ts';
import type { ClusterBed } from '../cluster/index.ts';
import { CLUSTER_PATHS } from '../cluster/index.ts';
import { httpCall } from '../cluster/client.ts';
import type { HttpResponse } from '../cluster/client.ts';
import { pkiPaths } from '../cluster/control-plane.ts';
import {
  API_SERVER_ENDPOINT,
  BOOTSTRAP_TOKEN,
  PLACEHOLDER_CONTROL_PLANE_NODE,
  caCertHash,
  initConfigYaml,
} from './config.ts';
import { KUBEADM_PATHS } from './paths.ts';

/** What a node needs to join: `kubeadm join <endpoint> --token <token> --discovery-token-ca-cert-hash <hash>`. */
export interface JoinTicket {
  endpoint: string;
  token: string;
  caCertHash: string;
  /** How long the three phases took. */
  prepareMs: number;
}

const PHASE_TIMEOUT_MS = 3 * 60_000;
const SIGNATURE_TIMEOUT_MS = 60_000;
const PREPARE_LOG = `${CLUSTER_PATHS.logDir}/kubeadm-prepare.log`;

/** An admin request to the bed's API server. */
function adminCall(
  cluster: ClusterBed,
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<HttpResponse> {
  return httpCall(`${cluster.server}${path}`, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    tls: { caFile: cluster.caFile, client: pkiPaths().admin },
    signal,
  });
}

async function runPhase(
  kubeadm: string,
  phase: string[],
  logger: Logger,
  signal?: AbortSignal,
): Promise<void> {
  const args = [
    'init',
    'phase',
    ...phase,
    `--config=${KUBEADM_PATHS.initConfig}`,
    `--kubeconfig=${CLUSTER_PATHS.adminKubeconfig}`,
    '--v=1',
  ];
  const started = Date.now();
  await appendFile(PREPARE_LOG, `\n===== ${new Date().toISOString()} kubeadm ${args.join(' ')}\n`);
  try {
    const { stdout, stderr } = await run(kubeadm, args, { timeoutMs: PHASE_TIMEOUT_MS, signal });
    await appendFile(PREPARE_LOG, stdout + stderr);
  } catch (err) {
    await appendFile(PREPARE_LOG, `FAILED: ${describeError(err)}\n`);
    throw new KubeletError(
      'Internal',
      `kubeadm init phase ${phase.join(' ')}`,
      `failed; log: ${PREPARE_LOG}`,
      {
        cause: err,
      },
    );
  }
  logger.info('kubeadm init phase done', { phase: phase.join(' '), ms: Date.now() - started });
}

/**
 * The Node `upload-config kubelet` annotates: it polls for a Node of that name with a
 * kubernetes.io/hostname label (apiclient.PatchNodeOnce). Unschedulable and tainted, so nothing is
 * ever placed on it in the second it exists.
 */
async function withPlaceholderNode<T>(
  cluster: ClusterBed,
  logger: Logger,
  signal: AbortSignal | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  const node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: PLACEHOLDER_CONTROL_PLANE_NODE,
      labels: { 'kubernetes.io/hostname': PLACEHOLDER_CONTROL_PLANE_NODE },
    },
    spec: {
      unschedulable: true,
      taints: [{ key: 'node-role.kubernetes.io/master', effect: 'NoSchedule' }],
    },
  };
  const created = await adminCall(cluster, 'POST', '/api/v1/nodes', node, signal);
  if (created.status !== 201 && created.status !== 409) {
    throw new KubeletError(
      'Internal',
      `create placeholder Node ${PLACEHOLDER_CONTROL_PLANE_NODE}`,
      `HTTP ${created.status}: ${created.body.slice(0, 300)}`,
    );
  }
  try {
    return await fn();
  } finally {
    const del = await adminCall(cluster, 'DELETE', `/api/v1/nodes/${PLACEHOLDER_CONTROL_PLANE_NODE}`).catch(
      (err: unknown) => ({ status: 0, body: describeError(err) }),
    );
    if (del.status !== 200 && del.status !== 404) {
      logger.warn('cannot delete the placeholder control-plane Node; delete it by hand', {
        node: PLACEHOLDER_CONTROL_PLANE_NODE,
        status: del.status,
        body: del.body.slice(0, 300),
      });
    }
  }
}

/** Waits for the bootstrapsigner controller to sign cluster-info with the token (`jws-kubeconfig-<id>`). */
async function waitForSignedClusterInfo(cluster: ClusterBed, signal?: AbortSignal): Promise<void> {
  const key = `jws-kubeconfig-${BOOTSTRAP_TOKEN.split('.')[0] ?? ''}`;
  const deadline = Date.now() + SIGNATURE_TIMEOUT_MS;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (signal?.aborted) throw abortReason(signal);
    try {
      const res = await adminCall(cluster, 'GET', '/api/v1/namespaces/kube-public/configmaps/cluster-info');
      if (res.status === 200) {
        const cm = JSON.parse(res.body) as { data?: Record<string, string> };
        if (cm.data?.[key] !== undefined) return;
        last = `no ${key} in its data`;
      } else {
        last = `HTTP ${res.status}`;
      }
    } catch (err) {
      last = describeError(err);
    }
    await sleep(500, signal);
  }
  throw new KubeletError(
    'DeadlineExceeded',
    'wait for the signed cluster-info ConfigMap',
    `${last} after ${SIGNATURE_TIMEOUT_MS} ms: does kube-controller-manager run the bootstrapsigner controller? ` +
      `log: ${CLUSTER_PATHS.logDir}/kube-controller-manager.log`,
  );
}

/**
 * Runs the three init phases against the running bed (idempotent: kubeadm creates or updates each
 * object; the token gets a fresh TTL) and waits for the signed cluster-info. ~5 s.
 */
export async function prepareControlPlane(
  cluster: ClusterBed,
  kubeadm: string,
  logger: Logger,
  signal?: AbortSignal,
): Promise<JoinTicket> {
  const started = Date.now();
  await mkdir(dirname(KUBEADM_PATHS.initConfig), { recursive: true, mode: 0o700 });
  await mkdir(dirname(PREPARE_LOG), { recursive: true });
  await writeFile(KUBEADM_PATHS.initConfig, initConfigYaml(), { mode: 0o600 });
  await runPhase(kubeadm, ['bootstrap-token'], logger, signal);
  await runPhase(kubeadm, ['upload-config', 'kubeadm'], logger, signal);
  await withPlaceholderNode(cluster, logger, signal, () =>
    runPhase(kubeadm, ['upload-config', 'kubelet'], logger, signal),
  );
  await waitForSignedClusterInfo(cluster, signal);
  return {
    endpoint: API_SERVER_ENDPOINT,
    token: BOOTSTRAP_TOKEN,
    caCertHash: caCertHash(await readFile(cluster.caFile, 'utf8')),
    prepareMs: Date.now() - started,
  };
}
