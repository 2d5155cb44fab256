/**
 * `kubeadm join` of one node to the cluster bed, with the binary under test as the node's kubelet:
 *
 *   const node = await kubeadmJoin({ kubeletBin, nodeName: 'itest-kubeadm' });
 *   ...                      // the Node registered through TLS bootstrap; node.paths has its files
 *   await node.reset();      // stop its kubelet, delete the Node, remove its files and mounts
 *
 * The cluster is prepared first (prepare.ts). The node gets a directory (default
 * /var/lib/tskubelet-bed/kubeadm-nodes/<node>) holding what a kubeadm node has in /etc/kubernetes and
 * /var/lib/kubelet, seen at those paths inside its mount namespace (namespace.ts), kubeadm's drop-in,
 * a `kubelet` link to the binary under test and the systemctl stand-in (systemctl.ts). kubeadm join
 * runs there unmodified (all phases, preflight included) and, when it asks systemd to restart the
 * kubelet, the harness starts it from kubeadm's generated files (kubelet-service.ts).
 * Upstream: cmd/kubeadm/app/cmd/join.go and phases/join (kubeadm 1.20).
 */
import { mkdir, readFile, symlink, unlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { nullLogger } from '../../../src/util/logger.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import type { ClusterBed } from '../cluster/index.ts';
import { httpCall } from '../cluster/client.ts';
import { pkiPaths } from '../cluster/control-plane.ts';
import { criAnswers } from '../containerd.ts';
import { ensureKubeadm } from './build.ts';
import { joinConfigYaml } from './config.ts';
import type { KubeletService } from './kubelet-service.ts';
import { kubeletService } from './kubelet-service.ts';
import { ensureNodeNamespace, inNamespace, removeNodeNamespace } from './namespace.ts';
import type { NodePaths } from './paths.ts';
import { KUBEADM_PATHS, NODE_BOUND_DIRS, nodePaths } from './paths.ts';
import type { JoinTicket } from './prepare.ts';
import { prepareControlPlane } from './prepare.ts';
import type { ServiceVerb } from './systemctl.ts';
import { answerSystemctl, writeSystemctl } from './systemctl.ts';
import { KUBEADM_DROP_IN } from './unit.ts';
import { runLogged } from './run-logged.ts';

/**
 * Preflight checks that cannot pass on the bed, each for a reason (RunJoinNodeChecks in
 * cmd/kubeadm/app/preflight/checks.go lists them all):
 * - FileExisting-crictl: cri-tools is not packaged in Debian 12 nor vendored in the 1.20 tree. kubeadm
 *   only looks crictl up on PATH (and, without it, skips its own CRI check with a warning); the
 *   harness checks the bed's containerd answers CRI before joining.
 * - FileExisting-conntrack: conntrack is kube-proxy's tool (its iptables mode flushes conntrack
 *   entries); the bed runs no kube-proxy and does not install it (scripts/setup.sh could: Debian's
 *   `conntrack` package would make this check pass).
 */
export const BED_IGNORED_PREFLIGHT_ERRORS: readonly string[] = [
  'FileExisting-crictl',
  'FileExisting-conntrack',
];

/** kubeadm join's own wait for the TLS bootstrap is 5 min (TLSBootstrapTimeout); discovery 2 min here. */
const JOIN_TIMEOUT_MS = 9 * 60_000;

export interface KubeadmJoinOptions {
  /** The node's kubelet: what /usr/bin/kubelet is on the node (a kubelet-compatible command line). */
  kubeletBin: string;
  nodeName: string;
  /** The node's directory (default `/var/lib/tskubelet-bed/kubeadm-nodes/<nodeName>`); emptied first. */
  rootDir?: string;
  /** The running bed (startCluster()); its CA and admin credentials prepare and check the join. */
  cluster: ClusterBed;
  /**
   * nodeRegistration.kubeletExtraArgs over the bed's (root-dir, node-ip 127.0.0.1, no QoS cgroups:
   * see bedKubeletExtraArgs; a key given here replaces the bed's); kubeadm writes them into
   * kubeadm-flags.env as `--key=value`.
   */
  kubeletExtraArgs?: Readonly<Record<string, string>>;
  /** KUBELET_EXTRA_ARGS in the node's /etc/default/kubelet (the drop-in reads it last). */
  extraArgs?: string;
  /** More preflight checks to ignore, beyond BED_IGNORED_PREFLIGHT_ERRORS. */
  ignorePreflightErrors?: readonly string[];
  logger?: Logger;
  signal?: AbortSignal;
}

export interface JoinedNode {
  nodeName: string;
  paths: NodePaths;
  /** The file `nsenter --mount=` takes to see the node's /etc/kubernetes and /var/lib/kubelet. */
  nsFile: string;
  kubelet: KubeletService;
  /** What `kubeadm join` printed (also in paths.joinLog). */
  joinOutput: string;
  /** The systemctl calls kubeadm made, as answered. */
  systemctl: readonly { verb: ServiceVerb; rc: number }[];
  timings: { prepareMs: number; joinMs: number };
  ticket: JoinTicket;
  /** Stops the kubelet, deletes the Node (unless `keepNode`), unmounts and removes the node's directory. */
  reset(opts?: { keepNode?: boolean }): Promise<void>;
}

/**
 * The flags every bed node gets through kubeadm-flags.env: its root dir by host path (the kubelet
 * runs in the node's namespace but containerd does not), the loopback address every bed kubelet
 * reports, and no QoS cgroups (cgroups-per-qos=false: a kubelet with them removes the other bed
 * kubelets' pod cgroups under the shared /kubepods as orphans; enforce-node-allocatable= because
 * its default `pods` needs them, and the ConfigMap cannot carry an empty list: omitempty).
 */
export function bedKubeletExtraArgs(paths: NodePaths): Record<string, string> {
  return {
    'root-dir': paths.kubeletDir,
    'node-ip': '127.0.0.1',
    'cgroups-per-qos': 'false',
    'enforce-node-allocatable': '',
  };
}

function checkRootDir(rootDir: string): void {
  const r = resolve(rootDir);
  if (!isAbsolute(rootDir) || r === '/' || NODE_BOUND_DIRS.some((d) => d === r || d.startsWith(`${r}/`))) {
    throw new KubeletError('InvalidArgument', 'kubeadm join', `${rootDir} cannot be a node's root directory`);
  }
}

async function adminDelete(cluster: ClusterBed, path: string): Promise<number> {
  const res = await httpCall(`${cluster.server}${path}`, {
    method: 'DELETE',
    tls: { caFile: cluster.caFile, client: pkiPaths().admin },
  });
  return res.status;
}

/** Stops a node left by an earlier run (its kubelet by pid file), removes its mounts and files. */
async function resetNodeDir(paths: NodePaths, nsFile: string, logger: Logger): Promise<void> {
  await kubeletService(paths, nsFile, logger).stop();
  await removeNodeNamespace(paths, logger);
}

/** Lays out the node's files: kubeadm's drop-in, /etc/default/kubelet, the kubelet link, systemctl. */
async function layOutNode(paths: NodePaths, opts: KubeadmJoinOptions, joinConfig: string): Promise<void> {
  // /etc/kubernetes/manifests: the kubelet package ships it empty (kubeadm's preflight accepts an empty one).
  const manifests = join(paths.kubernetesDir, 'manifests');
  for (const d of [
    paths.binDir,
    paths.runDir,
    dirname(paths.dropIn),
    dirname(paths.defaultsFile),
    manifests,
  ]) {
    await mkdir(d, { recursive: true });
  }
  await writeFile(paths.dropIn, KUBEADM_DROP_IN);
  if (opts.extraArgs !== undefined) {
    await writeFile(paths.defaultsFile, `KUBELET_EXTRA_ARGS=${JSON.stringify(opts.extraArgs)}\n`);
  }
  const link = join(paths.binDir, 'kubelet');
  await unlink(link).catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  });
  await symlink(resolve(opts.kubeletBin), link);
  await writeSystemctl(paths.binDir, paths.runDir, paths.dropIn);
  await writeFile(paths.joinConfig, joinConfig, { mode: 0o600 });
}

/**
 * Prepares the bed, lays out the node and runs `kubeadm join` in its namespace; resolves once kubeadm
 * reports the node joined (the kubelet finished its TLS bootstrap and the Node carries kubeadm's
 * cri-socket annotation). On failure the kubelet is left running and the files in place for a look:
 * call `resetKubeadmNode` (or the next join of that name resets them).
 */
export async function kubeadmJoin(opts: KubeadmJoinOptions): Promise<JoinedNode> {
  const logger = opts.logger ?? nullLogger;
  const { cluster, signal, nodeName } = opts;
  const rootDir = opts.rootDir ?? join(KUBEADM_PATHS.nodesDir, nodeName);
  checkRootDir(rootDir);
  const paths = nodePaths(rootDir);
  if (!(await criAnswers())) {
    throw new KubeletError('FailedPrecondition', 'kubeadm join', "the bed's containerd does not answer CRI");
  }
  const kubeadm = await ensureKubeadm(logger, signal);
  const ticket = await prepareControlPlane(cluster, kubeadm, logger, signal);

  await resetNodeDir(paths, join(rootDir, 'ns', 'mnt'), logger);
  // A Node of that name from an earlier run: kubeadm refuses to join over a Ready one.
  const stale = await adminDelete(cluster, `/api/v1/nodes/${nodeName}`);
  if (stale === 200) logger.info('deleted a Node left by an earlier join', { node: nodeName });

  const kubeletExtraArgs = { ...bedKubeletExtraArgs(paths), ...opts.kubeletExtraArgs };
  await layOutNode(
    paths,
    opts,
    joinConfigYaml({ nodeName, caCertHash: ticket.caCertHash, kubeletExtraArgs }),
  );
  const nsFile = await ensureNodeNamespace(paths, logger);
  const kubelet = kubeletService(paths, nsFile, logger);
  const answerer = answerSystemctl(
    paths.runDir,
    async (verb) => {
      logger.info(`kubeadm: systemctl ${verb} kubelet`, { node: nodeName });
      if (verb === 'stop') await kubelet.stop();
      else if (verb === 'start') await kubelet.start();
      else await kubelet.restart();
    },
    logger,
  );

  const ignored = [...BED_IGNORED_PREFLIGHT_ERRORS, ...(opts.ignorePreflightErrors ?? [])];
  const argv = inNamespace(nsFile, [
    kubeadm,
    'join',
    `--config=${paths.joinConfig}`,
    `--ignore-preflight-errors=${ignored.join(',')}`,
    '--v=1',
  ]);
  const started = Date.now();
  let joinOutput: string;
  try {
    joinOutput = await runLogged(argv, {
      log: paths.joinLog,
      env: { ...process.env, PATH: `${paths.binDir}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` },
      timeoutMs: JOIN_TIMEOUT_MS,
      signal,
    });
  } catch (err) {
    throw new KubeletError(
      'Internal',
      `kubeadm join ${nodeName}`,
      `${describeError(err)}\nkubeadm: ${paths.joinLog}; kubelet: ${paths.kubeletLog}`,
      { cause: err },
    );
  } finally {
    await answerer.stop();
  }
  const joinMs = Date.now() - started;
  logger.info('kubeadm join done', { node: nodeName, ms: joinMs, prepareMs: ticket.prepareMs });
  return {
    nodeName,
    paths,
    nsFile,
    kubelet,
    joinOutput,
    systemctl: answerer.handled,
    timings: { prepareMs: ticket.prepareMs, joinMs },
    ticket,
    async reset(resetOpts = {}) {
      await resetKubeadmNode({ nodeName, rootDir, cluster, logger, keepNode: resetOpts.keepNode });
    },
  };
}

/** Undoes a join (also one that failed half-way, or one from another process): see JoinedNode.reset. */
export async function resetKubeadmNode(opts: {
  nodeName: string;
  rootDir?: string;
  cluster: ClusterBed;
  logger?: Logger;
  keepNode?: boolean;
}): Promise<void> {
  const logger = opts.logger ?? nullLogger;
  const rootDir = opts.rootDir ?? join(KUBEADM_PATHS.nodesDir, opts.nodeName);
  checkRootDir(rootDir);
  const paths = nodePaths(rootDir);
  await resetNodeDir(paths, join(rootDir, 'ns', 'mnt'), logger);
  if (!opts.keepNode) {
    const status = await adminDelete(opts.cluster, `/api/v1/nodes/${opts.nodeName}`);
    if (status !== 200 && status !== 404) {
      logger.warn('cannot delete the joined Node', { node: opts.nodeName, status });
    }
  }
}

/** The kubeconfig the kubelet wrote after its TLS bootstrap (host path), or undefined before. */
export async function bootstrappedKubeconfig(node: JoinedNode): Promise<string | undefined> {
  try {
    return await readFile(node.paths.kubeletKubeconfig, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
