/**
 * Container garbage collection on real containerd (src/gc, every minute as upstream): what the
 * kill path leaves of a deleted pod — its log directory under podLogsDir — is gone within one GC
 * period, and nothing of a running pod is touched.
 *
 * Run under the shared bed lock:
 *   flock /tmp/tskubelet-itest.lock node_modules/.bin/node --test test/integration/container-gc.test.ts
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { IMAGE, containersOf, podManifest, removeManifest, sandboxesOf, writeManifest } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { useKubelet, waitForPhase } from './support.ts';
import { CONTAINER_GC_PERIOD_MS } from '../../src/config/defaults.ts';

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

describe('container garbage collection on real containerd', () => {
  const t = useKubelet();

  it("removes a deleted pod's log directory within one GC period, and leaves a running pod alone", async () => {
    const sleeper = (name: string) =>
      podManifest(name, { containers: [{ name: 'c', image: IMAGE, command: ['sleep', '3600'] }] });
    await writeManifest(t.env, 'gone.yaml', sleeper('gone'));
    await writeManifest(t.env, 'stays.yaml', sleeper('stays'));
    const gone = await waitForPhase(t.k.kubelet, 'gone', 'Running');
    const stays = await waitForPhase(t.k.kubelet, 'stays', 'Running');
    const goneUid = gone.pod.metadata.uid ?? '';
    const staysUid = stays.pod.metadata.uid ?? '';
    const goneLogs = join(t.env.logsDir, `default_gone-itest_${goneUid}`);
    const staysLogs = join(t.env.logsDir, `default_stays-itest_${staysUid}`);
    assert.ok(await exists(goneLogs), goneLogs);

    await removeManifest(t.env, 'gone.yaml');
    await eventually('the deleted pod gone from the runtime', async () => {
      const left = (await containersOf(t.env, goneUid)).length + (await sandboxesOf(t.env, goneUid)).length;
      return left === 0 ? true : undefined;
    });
    await eventually(
      'the log directory removed by the GC',
      async () => ((await exists(goneLogs)) ? undefined : true),
      CONTAINER_GC_PERIOD_MS + 15_000,
    );

    const [running] = await containersOf(t.env, staysUid);
    assert.equal(running?.state, 'CONTAINER_RUNNING');
    assert.equal((await sandboxesOf(t.env, staysUid)).length, 1);
    assert.ok(await exists(staysLogs), 'the running pod keeps its logs');
  });
});
