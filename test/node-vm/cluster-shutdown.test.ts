/**
 * Graceful node shutdown in cluster mode on the systemd + cgroup v2 node VM (full mode, not in
 * scripts/test.sh): tskubelet in the VM joined to the bed's API server on the host, an ordinary pod
 * and a system-node-critical pod bound to its node, then `systemctl poweroff`. The ordinary pod must
 * end first, the critical one in the last `shutdownGracePeriodCriticalPods`, both with their preStop
 * hook and SIGTERM, and both must be posted to the API as upstream does: phase Failed, reason
 * Shutdown. Upstream's counterpart: test/e2e_node/node_shutdown_linux_test.go.
 *
 *   node --test test/node-vm/cluster-shutdown.test.ts      (~5 min under TCG)
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startCluster } from '../harness/cluster/index.ts';
import { CHECKOUT, guestKubeconfig, type NodeVm } from '../harness/index.ts';
import { kubectlFor, type Kubectl } from '../kit/kubectl.ts';
import { until } from '../kit/poll.ts';
import type { Pod } from '../../src/api/types.ts';
import {
  SOCKET,
  bootNodeBed,
  installKubeletUnit,
  kubeletConfig,
  markingPod,
  sh,
  stopNodeBed,
  testLogger,
  unitState,
  writeGuestFiles,
  type NodeBed,
} from './lib/qos-node.ts';

const SETUP_TIMEOUT_MS = 40 * 60_000;
const NODE = 'node-vm-shutdown';
const GRACE_S = 30;
const CRITICAL_GRACE_S = 10;
const UNIT = 'tskubelet.service';
const CONFIG = '/var/lib/kubelet/config.yaml';
const KUBECONFIG = '/etc/kubernetes/kubelet.conf';
/** Upstream 1.20's nodeShutdownReason and nodeShutdownMessage (pkg/kubelet/nodeshutdown). */
const SHUTDOWN_REASON = 'Shutdown';
const SHUTDOWN_MESSAGE = 'Node is shutting, evicting pods';

interface PodView {
  metadata: { name: string; namespace: string };
  status?: { phase?: string; reason?: string; message?: string };
}

/** A pod of `markingPod` bound to the VM's node, in `namespace`, with a priority class if given. */
function apiPod(name: string, namespace: string, results: string, priorityClassName?: string): Pod {
  const pod = markingPod(name, {}, results);
  pod.metadata.namespace = namespace;
  pod.spec.nodeName = NODE;
  if (priorityClassName) pod.spec.priorityClassName = priorityClassName;
  return pod;
}

const PODS = [
  { name: 'ordinary', namespace: 'default' },
  { name: 'critical', namespace: 'kube-system', priorityClassName: 'system-node-critical' },
] as const;

describe('graceful node shutdown in cluster mode on a systemd node (node VM, full mode)', () => {
  let bed: NodeBed | undefined;
  let kubectl: Kubectl | undefined;
  const guest = (): NodeVm => {
    assert.ok(bed, 'the node VM did not boot (see the before hook)');
    return bed.vm;
  };
  const k = (): Kubectl => {
    assert.ok(kubectl, 'the cluster bed did not start (see the before hook)');
    return kubectl;
  };
  const podsOnNode = async (): Promise<Map<string, PodView>> => {
    const out = await k().ok([
      'get',
      'pods',
      '-A',
      '--field-selector',
      `spec.nodeName=${NODE}`,
      '-o',
      'json',
    ]);
    const items = (JSON.parse(out) as { items: PodView[] }).items;
    return new Map(items.map((p) => [p.metadata.name, p]));
  };

  before(
    async () => {
      const c = await startCluster({ logger: testLogger() });
      kubectl = kubectlFor(() => c.adminKubeconfig);
      await k().ok(['delete', 'node', NODE, '--ignore-not-found']);
      for (const p of PODS) {
        await k().ok([
          'delete',
          'pod',
          '-n',
          p.namespace,
          p.name,
          '--ignore-not-found',
          '--grace-period=0',
          '--force',
        ]);
      }
      bed = await bootNodeBed();
      const { vm, results } = bed;
      await writeGuestFiles(vm, [
        [KUBECONFIG, guestKubeconfig(await readFile(await c.kubeletKubeconfig(NODE), 'utf8'))],
        [CONFIG, kubeletConfig({ shutdownGraceS: GRACE_S, criticalGraceS: CRITICAL_GRACE_S })],
      ]);
      await installKubeletUnit(
        vm,
        {
          unit: UNIT,
          unitFile: await readFile(path.join(CHECKOUT, 'deploy/systemd/tskubelet.service'), 'utf8'),
          execStart: [
            `${CHECKOUT}/bin/tskubelet run`,
            `--config=${CONFIG}`,
            `--kubeconfig=${KUBECONFIG}`,
            `--hostname-override=${NODE}`,
            `--container-runtime-endpoint=${SOCKET}`,
            '--v=2',
          ].join(' '),
        },
        results,
        [],
      );
      await until(
        `node ${NODE} Ready`,
        async () =>
          (
            await k().run([
              'get',
              'node',
              NODE,
              '-o',
              'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
            ])
          ).stdout === 'True',
        { timeoutMs: 10 * 60_000, intervalMs: 3_000, describe: () => unitState(vm, UNIT, results) },
      );
      for (const p of PODS) {
        const pod = apiPod(
          p.name,
          p.namespace,
          results,
          'priorityClassName' in p ? p.priorityClassName : undefined,
        );
        await k().ok(['apply', '-f', '-'], JSON.stringify(pod));
      }
      await until(
        'both pods running',
        async () => {
          const pods = await podsOnNode();
          return PODS.every((p) => pods.get(p.name)?.status?.phase === 'Running');
        },
        { timeoutMs: 8 * 60_000, intervalMs: 3_000, describe: () => unitState(vm, UNIT, results) },
      );
    },
    { timeout: SETUP_TIMEOUT_MS },
  );
  after(
    async () => {
      await stopNodeBed(bed);
      for (const p of PODS) {
        await kubectl?.run([
          'delete',
          'pod',
          '-n',
          p.namespace,
          p.name,
          '--ignore-not-found',
          '--grace-period=0',
          '--force',
        ]);
      }
      await kubectl?.run(['delete', 'node', NODE, '--ignore-not-found']);
    },
    { timeout: 240_000 },
  );

  it('ends the ordinary pod first and the critical pod last, and posts both as Failed/Shutdown', async () => {
    const locks = await sh(guest(), 'systemd-inhibit --list --no-pager --no-legend');
    assert.match(locks, /kubelet.*shutdown.*delay/, locks);
    const results = bed?.results ?? '';
    await guest().stop({ timeoutMs: (GRACE_S + 150) * 1000 });

    const marks = async (name: string): Promise<Map<string, number>> => {
      const text = await readFile(path.join(results, name), 'utf8').catch(() => '');
      return new Map(
        text.split('\n').flatMap((l) => {
          const [what, at] = l.split(' ');
          return what && at ? [[what, Number(at)] as const] : [];
        }),
      );
    };
    const ordinary = await marks('ordinary');
    const critical = await marks('critical');
    for (const [name, m] of [
      ['ordinary', ordinary],
      ['critical', critical],
    ] as const) {
      assert.ok(
        m.has('preStop') && m.has('TERM'),
        `${name}: preStop then SIGTERM (${JSON.stringify([...m])})`,
      );
    }
    // Ordinary pods get the first GRACE_S − CRITICAL_S seconds; critical pods start after them.
    assert.ok(
      (ordinary.get('TERM') ?? Infinity) <= (critical.get('preStop') ?? -Infinity),
      `the ordinary pod ended (${ordinary.get('TERM')}) before the critical one began stopping (${critical.get('preStop')})`,
    );

    const pods = await podsOnNode();
    for (const p of PODS) {
      const s = pods.get(p.name)?.status;
      assert.equal(s?.phase, 'Failed', `${p.name}: ${JSON.stringify(s)}`);
      assert.equal(s?.reason, SHUTDOWN_REASON, `${p.name}: ${JSON.stringify(s)}`);
      assert.equal(s?.message, SHUTDOWN_MESSAGE, `${p.name}: ${JSON.stringify(s)}`);
    }
  });
});
