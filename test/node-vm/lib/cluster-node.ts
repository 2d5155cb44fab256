/**
 * tskubelet in the node VM joined to the bed's API server on the host (cluster mode): the node's
 * kubeconfig (its server moved to 10.0.2.2, how the guest sees the host's loopback), a kubeadm-style
 * config, the unit, and kubectl for the pods bound to the node. API pods, not static pods, for what
 * only API pods get: eviction (static pods are critical and never evicted, as upstream) and
 * statuses posted to the API. `clusterNodeSuite` holds one such node for a describe() block.
 */
import path from 'node:path';
import { readFile } from 'node:fs/promises';
import assert from 'node:assert/strict';
import { after } from 'node:test';
import { startCluster } from '../../harness/cluster/index.ts';
import { CHECKOUT, guestKubeconfig, type NodeVm } from '../../harness/index.ts';
import { kubectlFor, untilNodeReady, type Kubectl } from '../../kit/kubectl.ts';
import type { Pod } from '../../../src/api/types.ts';
import {
  SOCKET,
  bootNodeBed,
  installKubeletUnit,
  stopNodeBed,
  testLogger,
  unitState,
  writeGuestFiles,
  type NodeBed,
} from './qos-node.ts';

export const UNIT = 'tskubelet.service';
const CONFIG = '/var/lib/kubelet/config.yaml';
const KUBECONFIG = '/etc/kubernetes/kubelet.conf';
const READY_TIMEOUT_MS = 10 * 60_000;
const TEARDOWN_TIMEOUT_MS = 240_000;

export interface PodView {
  metadata: { name: string; namespace: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    containerStatuses?: {
      state?: { running?: object; terminated?: { exitCode?: number; reason?: string } };
    }[];
  };
}

export interface ClusterNode {
  kubectl: Kubectl;
  /** The pods bound to the node, by name. */
  pods(): Promise<Map<string, PodView>>;
  /** Creates `pod` bound to the node. */
  create(pod: Pod): Promise<void>;
  /** Deletes the node's pods (force) and its Node object; the VM is the caller's. */
  cleanUp(pods: readonly { name: string; namespace: string }[]): Promise<void>;
}

/**
 * Starts (or reuses) the cluster bed, removes a stale Node `node`, installs tskubelet in `bed`'s VM
 * as its unit with `config` (a KubeletConfiguration) and the node's kubeconfig, and resolves once
 * the Node is Ready.
 */
export async function joinClusterNode(bed: NodeBed, node: string, config: string): Promise<ClusterNode> {
  const cluster = await startCluster({ logger: testLogger() });
  const kubectl = kubectlFor(() => cluster.adminKubeconfig);
  await kubectl.ok(['delete', 'node', node, '--ignore-not-found']);
  const { vm, results } = bed;
  await writeGuestFiles(vm, [
    [KUBECONFIG, guestKubeconfig(await readFile(await cluster.kubeletKubeconfig(node), 'utf8'))],
    [CONFIG, config],
  ]);
  const execStart = [
    `${CHECKOUT}/bin/tskubelet run`,
    `--config=${CONFIG}`,
    `--kubeconfig=${KUBECONFIG}`,
    `--hostname-override=${node}`,
    `--container-runtime-endpoint=${SOCKET}`,
    '--v=2',
  ].join(' ');
  const unitFile = await readFile(path.join(CHECKOUT, 'deploy/systemd/tskubelet.service'), 'utf8');
  await installKubeletUnit(vm, { unit: UNIT, unitFile, execStart }, results, []);
  await untilNodeReady(kubectl, node, {
    timeoutMs: READY_TIMEOUT_MS,
    intervalMs: 3_000,
    describe: () => unitState(vm, UNIT, results),
  });
  const forceDelete = (ns: string, name: string) =>
    kubectl.run(['delete', 'pod', '-n', ns, name, '--ignore-not-found', '--grace-period=0', '--force']);
  return {
    kubectl,
    async pods() {
      const out = await kubectl.ok([
        'get',
        'pods',
        '-A',
        '--field-selector',
        `spec.nodeName=${node}`,
        '-o',
        'json',
      ]);
      const items = (JSON.parse(out) as { items: PodView[] }).items;
      return new Map(items.map((p) => [p.metadata.name, p]));
    },
    async create(pod) {
      assert.ok(pod.metadata.name, 'a pod needs a name');
      await forceDelete(pod.metadata.namespace ?? 'default', pod.metadata.name);
      await kubectl.ok(
        ['apply', '-f', '-'],
        JSON.stringify({ ...pod, spec: { ...pod.spec, nodeName: node } }),
      );
    },
    async cleanUp(pods) {
      for (const p of pods) await forceDelete(p.namespace, p.name);
      await kubectl.run(['delete', 'node', node, '--ignore-not-found']);
    },
  };
}

/** The node of one describe() block; see {@link clusterNodeSuite}. */
export interface ClusterNodeSuite {
  /**
   * For the block's before hook: boots the node VM, runs `prepare` on it (e.g. a slice the
   * config names), then joins it as the block's node with `config` (a KubeletConfiguration).
   */
  join(config: string, prepare?: (bed: NodeBed) => Promise<void>): Promise<ClusterNode>;
  /** The node VM; fails the test when the before hook did not boot it. */
  readonly guest: () => NodeVm;
  /** The joined node; fails the test when the before hook did not join it. */
  readonly joined: () => ClusterNode;
  /** The results folder shared with the guest ('' before the boot). */
  readonly results: () => string;
}

/**
 * One cluster node `node` for the describe() block this is called in, and its after hook: the VM
 * stopped, then `pods` and the Node deleted, whatever state the before hook left.
 */
export function clusterNodeSuite(
  node: string,
  pods: readonly { name: string; namespace: string }[],
): ClusterNodeSuite {
  let bed: NodeBed | undefined;
  let joined: ClusterNode | undefined;
  after(
    async () => {
      await stopNodeBed(bed);
      await joined?.cleanUp(pods);
    },
    { timeout: TEARDOWN_TIMEOUT_MS },
  );
  return {
    async join(config, prepare) {
      bed = await bootNodeBed();
      await prepare?.(bed);
      joined = await joinClusterNode(bed, node, config);
      return joined;
    },
    guest: () => {
      assert.ok(bed, 'the node VM did not boot (see the before hook)');
      return bed.vm;
    },
    joined: () => {
      assert.ok(joined, 'the node did not join (see the before hook)');
      return joined;
    },
    results: () => bed?.results ?? '',
  };
}
