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
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { until } from '../kit/poll.ts';
import type { Pod } from '../../src/api/types.ts';
import { clusterNodeSuite, UNIT } from './lib/cluster-node.ts';
import { kubeletConfig, markingPod, sh, unitState } from './lib/qos-node.ts';

const SETUP_TIMEOUT_MS = 40 * 60_000;
const NODE = 'node-vm-shutdown';
const GRACE_S = 30;
const CRITICAL_GRACE_S = 10;
/** Upstream 1.20's nodeShutdownReason and nodeShutdownMessage (pkg/kubelet/nodeshutdown). */
const SHUTDOWN_REASON = 'Shutdown';
const SHUTDOWN_MESSAGE = 'Node is shutting, evicting pods';

/** A pod of `markingPod` in `namespace`, with a priority class if given. */
function apiPod(name: string, namespace: string, results: string, priorityClassName?: string): Pod {
  const pod = markingPod(name, {}, results);
  pod.metadata.namespace = namespace;
  if (priorityClassName) pod.spec.priorityClassName = priorityClassName;
  return pod;
}

const PODS = [
  { name: 'ordinary', namespace: 'default' },
  { name: 'critical', namespace: 'kube-system', priorityClassName: 'system-node-critical' },
] as const;

describe('graceful node shutdown in cluster mode on a systemd node (node VM, full mode)', () => {
  const suite = clusterNodeSuite(NODE, PODS);
  const { guest, joined, results } = suite;

  before(
    async () => {
      const node = await suite.join(
        kubeletConfig({ shutdownGraceS: GRACE_S, criticalGraceS: CRITICAL_GRACE_S }),
      );
      for (const p of PODS) {
        await node.create(
          apiPod(p.name, p.namespace, results(), 'priorityClassName' in p ? p.priorityClassName : undefined),
        );
      }
      await until(
        'both pods running',
        async () => {
          const pods = await node.pods();
          return PODS.every((p) => pods.get(p.name)?.status?.phase === 'Running');
        },
        {
          timeoutMs: 8 * 60_000,
          intervalMs: 3_000,
          describe: () => unitState(guest(), UNIT, results()),
        },
      );
    },
    { timeout: SETUP_TIMEOUT_MS },
  );

  it('ends the ordinary pod first and the critical pod last, and posts both as Failed/Shutdown', async () => {
    const locks = await sh(guest(), 'systemd-inhibit --list --no-pager --no-legend');
    assert.match(locks, /kubelet.*shutdown.*delay/, locks);
    await guest().stop({ timeoutMs: (GRACE_S + 150) * 1000 });

    const marks = async (name: string): Promise<Map<string, number>> => {
      const text = await readFile(path.join(results(), name), 'utf8').catch(() => '');
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

    const pods = await joined().pods();
    for (const p of PODS) {
      const s = pods.get(p.name)?.status;
      assert.equal(s?.phase, 'Failed', `${p.name}: ${JSON.stringify(s)}`);
      assert.equal(s?.reason, SHUTDOWN_REASON, `${p.name}: ${JSON.stringify(s)}`);
      assert.equal(s?.message, SHUTDOWN_MESSAGE, `${p.name}: ${JSON.stringify(s)}`);
    }
  });
});
