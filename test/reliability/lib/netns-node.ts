/**
 * A tskubelet node in its own network namespace, joined to the cluster bed: the namespace and its
 * veth link (netns-net.ts), its own containerd (own root, state, socket, config and CNI bridge on
 * its own pod range, started inside the namespace so its pods' bridge lives there), the bed's images
 * imported, and `bin/tskubelet run` inside the namespace with node IP = its namespace address.
 *
 * Processes enter the namespace with `nsenter --net` only, not `ip netns exec`: the latter also
 * gives them a private mount namespace with a fresh /sys (no cgroup mounts), so containerd would
 * not see the kubelet's volume mounts and runc would find no cgroups.
 *
 * Isolation from the bed and from each other (three kubelets on one host):
 * - cgroups: each kubelet gets `cgroupRoot: /tskrel-mn-<i>` (made here in every hierarchy), so its
 *   QoS tree is `/tskrel-mn-<i>/kubepods`. With the default root they would share `/kubepods`, and
 *   each kubelet's orphaned-pod-cgroup cleanup would remove (and kill) the others' pods.
 * - pod logs: `podLogsDir` (a config-file field) per node instead of the shared /var/log/pods.
 * - ports (10250, 10248): each kubelet listens in its own namespace, so the defaults never collide.
 *
 * `teardownNode` works from names alone (no handle), so it also removes what a run that died midway
 * left: kubelet, CRI pods, containerd, shims, container processes, cgroups, mounts, link, directories.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { sleep } from '../../../src/util/abort.ts';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import type { Logger } from '../../../src/util/logger.ts';
import { createCriClient } from '../../../src/runtime/cri/index.ts';
import type { ClusterBed } from '../../harness/cluster/index.ts';
import { CLUSTER_PORTS } from '../../harness/cluster/paths.ts';
import { cniConflist, containerdConfig, criAnswers } from '../../harness/containerd.ts';
import { ensureImages } from '../../harness/images.ts';
import { removeAllPods } from '../../harness/index.ts';
import { TSKUBELET_BIN, spawnLogged, variantKubeletFlags } from '../../kit/process.ts';
import {
  NETNS_PREFIX,
  createLink,
  deleteLink,
  healLink,
  inNetns,
  linkLayout,
  partitionLink,
  startForwarder,
  type NetnsLinkLayout,
  type PartitionMode,
  type TcpForwarder,
} from './netns-net.ts';
import {
  createCgroupRoot,
  processesMatching,
  removeCgroupRoot,
  terminatePids,
  unmountAll,
} from './netns-host.ts';

export const NETNS_DIRS = {
  lib: `/var/lib/${NETNS_PREFIX}`,
  run: `/run/${NETNS_PREFIX}`,
  log: `/var/log/${NETNS_PREFIX}`,
} as const;

/** The label every netns node registers with (pods select them by it). */
export const NETNS_NODE_LABEL = 'tskubelet.example/netns-node';

export interface NetnsNodeLayout {
  index: number;
  /** Node name, e.g. `tskrel-mn-1`. */
  name: string;
  link: NetnsLinkLayout;
  /** `/tskrel-mn-<i>` in every cgroup hierarchy. */
  cgroupRoot: string;
  lib: string;
  run: string;
  log: string;
  socket: string;
  containerdConfig: string;
  kubeletRoot: string;
  podLogsDir: string;
}

export function nodeLayout(index: number): NetnsNodeLayout {
  const link = linkLayout(index);
  const lib = `${NETNS_DIRS.lib}/n${index}`;
  const runDir = `${NETNS_DIRS.run}/n${index}`;
  return {
    index,
    name: `${NETNS_PREFIX}-${index}`,
    link,
    cgroupRoot: `/${NETNS_PREFIX}-${index}`,
    lib,
    run: runDir,
    log: `${NETNS_DIRS.log}/n${index}`,
    socket: `${runDir}/containerd.sock`,
    containerdConfig: `${lib}/containerd.toml`,
    kubeletRoot: `${lib}/kubelet`,
    podLogsDir: `${lib}/pod-logs`,
  };
}

/** The bed's containerd config and CNI conflist with every path, the bridge and the range made the node's. */
function rebase(text: string, n: NetnsNodeLayout): string {
  const out = text
    .replaceAll('/var/lib/tskubelet-bed/', `${n.lib}/`)
    .replaceAll('/run/tskubelet-bed/', `${n.run}/`)
    .replaceAll('/etc/tskubelet-bed/', `${n.lib}/etc/`)
    .replaceAll('tskbed0', 'tskrel0')
    .replaceAll('10.88.0.0/16', n.link.podSubnet)
    .replaceAll('tskubelet-bed', NETNS_PREFIX);
  if (out.includes('tskubelet-bed') || out.includes('10.88.')) {
    throw new KubeletError('Internal', `containerd config of ${n.name}`, 'a bed path or range survived');
  }
  return out;
}

export interface SpawnedProcess {
  readonly pid: number;
  readonly log: string;
  exited(): boolean;
}

/** Spawns argv detached (its own process group: a Ctrl-C reaches only the runner, which cleans up). */
function spawnDetached(argv: readonly string[], log: string): SpawnedProcess {
  const p = spawnLogged(argv[0] ?? '', argv.slice(1), { logFile: log, detached: true });
  return { pid: p.pid, log, exited: () => p.exited() };
}

export interface NetnsNode {
  readonly layout: NetnsNodeLayout;
  readonly containerd: SpawnedProcess;
  readonly kubelet: SpawnedProcess;
  readonly forwarder: TcpForwarder;
  /** Cuts the node off from everything outside its namespace (see PartitionMode). */
  partition(mode: PartitionMode): Promise<void>;
  heal(mode: PartitionMode): Promise<void>;
}

export interface NodeSetupOptions {
  cluster: ClusterBed;
  logger: Logger;
  /** Extra `bin/tskubelet run` flags. */
  kubeletArgs?: readonly string[];
}

/** A kubeconfig for the node: the bed's node identity, the server at the node's forwarder. */
async function nodeKubeconfig(n: NetnsNodeLayout, cluster: ClusterBed): Promise<string> {
  const bedKubeconfig = await cluster.kubeletKubeconfig(n.name);
  const doc = parse(await readFile(bedKubeconfig, 'utf8')) as {
    clusters?: { cluster: Record<string, unknown> }[];
  };
  const c = doc.clusters?.[0]?.cluster;
  if (!c) throw new KubeletError('Internal', `kubeconfig of ${n.name}`, `no cluster in ${bedKubeconfig}`);
  c.server = `https://${n.link.hostAddr}:${CLUSTER_PORTS.apiserver}`;
  // The apiserver's serving certificate names 127.0.0.1 and `kubernetes`, not the forwarder's address.
  c['tls-server-name'] = 'kubernetes';
  const path = join(n.lib, 'kubeconfig');
  await writeFile(path, stringify(doc), { mode: 0o600 });
  return path;
}

async function waitCri(n: NetnsNodeLayout, proc: SpawnedProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await criAnswers(n.socket, 1_000))) {
    if (proc.exited() || Date.now() > deadline) {
      const tail = (await readFile(proc.log, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n');
      throw new KubeletError(
        'Unavailable',
        `start containerd of ${n.name}`,
        `${proc.exited() ? 'exited' : `no CRI answer in ${timeoutMs} ms`}; log ${proc.log}:\n${tail}`,
      );
    }
    await sleep(100);
  }
}

/**
 * Brings node `index` up (its namespace and link, forwarder, cgroup root, containerd with the bed's
 * images, tskubelet). Expects `teardownNode(index)` to have run; does not wait for the node to be
 * Ready. On failure, what was made stays for `teardownNode`, except the forwarder, which it closes.
 */
export async function setupNode(index: number, opts: NodeSetupOptions): Promise<NetnsNode> {
  const n = nodeLayout(index);
  const log = opts.logger.child({ node: n.name });
  for (const d of [n.lib, n.run, n.log, n.kubeletRoot, n.podLogsDir, `${n.lib}/etc/cni/net.d`]) {
    await mkdir(d, { recursive: true });
  }
  await createLink(n.link);
  const forwarder = await startForwarder(
    { host: n.link.hostAddr, port: CLUSTER_PORTS.apiserver },
    { host: '127.0.0.1', port: CLUSTER_PORTS.apiserver },
    log,
  );
  try {
    await createCgroupRoot(n.cgroupRoot);
    await writeFile(n.containerdConfig, rebase(containerdConfig(), n));
    await writeFile(`${n.lib}/etc/cni/net.d/10-${NETNS_PREFIX}.conflist`, rebase(cniConflist(), n));
    const containerd = spawnDetached(
      [...inNetns(n.link.netns), 'containerd', '--config', n.containerdConfig],
      join(n.log, 'containerd.log'),
    );
    await waitCri(n, containerd, 30_000);
    await ensureImages(n.socket, log);
    const kubeconfig = await nodeKubeconfig(n, opts.cluster);
    const config = join(n.lib, 'kubelet-config.yaml');
    await writeFile(
      config,
      stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        cgroupRoot: n.cgroupRoot,
        podLogsDir: n.podLogsDir,
      }),
    );
    const kubelet = spawnDetached(
      [
        ...inNetns(n.link.netns),
        TSKUBELET_BIN,
        'run',
        '--config',
        config,
        '--kubeconfig',
        kubeconfig,
        '--container-runtime-endpoint',
        `unix://${n.socket}`,
        '--root-dir',
        n.kubeletRoot,
        '--hostname-override',
        n.name,
        '--node-ip',
        n.link.nodeAddr,
        '--node-labels',
        `${NETNS_NODE_LABEL}=true`,
        ...(opts.kubeletArgs ?? []),
        ...variantKubeletFlags(),
      ],
      join(n.log, 'tskubelet.log'),
    );
    log.info('netns node started', {
      netns: n.link.netns,
      nodeIP: n.link.nodeAddr,
      podSubnet: n.link.podSubnet,
      containerdPid: containerd.pid,
      kubeletPid: kubelet.pid,
    });
    return {
      layout: n,
      containerd,
      kubelet,
      forwarder,
      partition: (mode) => partitionLink(n.link, mode),
      heal: (mode) => healLink(n.link, mode),
    };
  } catch (err) {
    await forwarder.stop();
    throw err;
  }
}

/** The node's CRI containers: id, sandbox, name, attempt, state. */
export interface CriContainerSummary {
  id: string;
  sandbox: string;
  name: string;
  attempt: number;
  state: string;
  createdAt: number;
}

export async function nodeContainers(n: NetnsNodeLayout): Promise<CriContainerSummary[]> {
  const cri = createCriClient({ endpoint: `unix://${n.socket}`, timeoutMs: 10_000 });
  try {
    return (await cri.runtime.listContainers()).map((c) => ({
      id: c.id,
      sandbox: c.podSandboxId,
      name: c.metadata.name,
      attempt: c.metadata.attempt,
      state: c.state,
      createdAt: c.createdAt,
    }));
  } finally {
    cri.close();
  }
}

/**
 * Removes everything node `index` may have left, by name: its tskubelet, its CRI pods (through its
 * containerd, when that still answers), containerd, shims, processes left in its cgroup root, the
 * cgroup root, mounts under its directories, its link and namespace, and its directories (the log
 * directory only unless `keepLogs`). Tolerates anything already gone; collects failures and throws
 * them together at the end, after trying every step.
 */
export async function teardownNode(index: number, logger: Logger, keepLogs = false): Promise<void> {
  const n = nodeLayout(index);
  const log = logger.child({ node: n.name });
  const failures: string[] = [];
  const step = async (what: string, fn: () => Promise<void>): Promise<void> => {
    try {
      await fn();
    } catch (err) {
      failures.push(`${what}: ${describeError(err)}`);
    }
  };
  const mine = (needle: string) => processesMatching(needle);
  await step('stop tskubelet', async () => {
    const pids = (await mine(`${n.kubeletRoot} `)).map((p) => p.pid);
    if (pids.length > 0) await terminatePids(pids, 15_000, log);
  });
  await step('remove CRI pods', async () => {
    if (!(await criAnswers(n.socket, 2_000))) return;
    await removeAllPods({
      socket: n.socket,
      endpoint: `unix://${n.socket}`,
      podSubnet: n.link.podSubnet,
      stop: () => Promise.resolve(),
    });
  });
  await step('stop containerd', async () => {
    const pids = (await mine(n.containerdConfig)).map((p) => p.pid);
    if (pids.length > 0) await terminatePids(pids, 10_000, log);
  });
  await step('stop shims and anything else naming the node', async () => {
    // Shims are started with `-address <socket>`; they end once their tasks are gone.
    const pids = [...(await mine(`${n.run}/`)), ...(await mine(`${n.lib}/`))].map((p) => p.pid);
    if (pids.length > 0) await terminatePids([...new Set(pids)], 5_000, log);
  });
  await step('remove cgroup root', () => removeCgroupRoot(n.cgroupRoot, log));
  await step('unmount', async () => {
    await unmountAll(n.lib);
    await unmountAll(n.run);
  });
  await step('remove link and namespace', () => deleteLink(n.link));
  await step('remove directories', async () => {
    await rm(n.lib, { recursive: true, force: true });
    await rm(n.run, { recursive: true, force: true });
    if (!keepLogs) await rm(n.log, { recursive: true, force: true });
  });
  if (failures.length > 0) throw new KubeletError('Internal', `tear down ${n.name}`, failures.join('; '));
}
