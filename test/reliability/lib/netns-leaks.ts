/**
 * After the multi-node scenario's cleanup: nothing of it may be left on the host or in the API —
 * namespaces, links, processes, mounts, cgroups, directories, CNI sandbox namespaces made during the
 * run, Node objects, the Deployment's pods.
 */
import { stat } from 'node:fs/promises';
import type { ApiClient } from '../../../src/api/client-types.ts';
import { sleep } from '../../../src/util/abort.ts';
import { describeError } from '../../../src/util/errors.ts';
import { check, type Check } from '../report.ts';
import { forceDeletePods, nodesWithPrefix, spreadPods } from './netns-cluster.ts';
import { cgroupRootsWithPrefix, mountsUnder, processesMatching } from './netns-host.ts';
import { NETNS_DIRS, nodeLayout } from './netns-node.ts';
import { NETNS_PREFIX, allNetns, ourLinks, ourNetns } from './netns-net.ts';

const exists = async (p: string) => (await stat(p).catch(() => undefined)) !== undefined;

function listed(what: string, found: readonly string[]): Check {
  return check(
    `leaks after cleanup: ${what}`,
    'none',
    found.length === 0 ? 'none' : `${found.length}: ${found.slice(0, 5).join(', ')}`,
    found.length === 0,
  );
}

/** One check per kind of leftover; a survey that fails is a failed check, not an exception. */
export async function leakChecks(api: ApiClient, netnsBefore: ReadonlySet<string>): Promise<Check[]> {
  const out: Check[] = [];
  const survey = async (what: string, find: () => Promise<string[]>) => {
    try {
      out.push(listed(what, await find()));
    } catch (err) {
      out.push(check(`leaks after cleanup: ${what}`, 'none', `survey failed: ${describeError(err)}`, false));
    }
  };
  await survey(`network namespaces ${NETNS_PREFIX}*`, ourNetns);
  await survey('CNI sandbox namespaces made during the run', async () =>
    (await allNetns()).filter((n) => !netnsBefore.has(n) && !n.startsWith(NETNS_PREFIX)),
  );
  await survey(`host links ${NETNS_PREFIX}*`, ourLinks);
  await survey('processes (tskubelet, containerd, shims) naming our directories', async () =>
    (await processesMatching(`/${NETNS_PREFIX}/`)).map((p) => `${p.pid} ${p.cmdline.slice(0, 80)}`),
  );
  await survey('mounts under our directories', async () => [
    ...(await mountsUnder(NETNS_DIRS.lib)),
    ...(await mountsUnder(NETNS_DIRS.run)),
  ]);
  await survey(`cgroups /${NETNS_PREFIX}-*`, () => cgroupRootsWithPrefix(`${NETNS_PREFIX}-`));
  await survey('directories', async () => {
    const left = [];
    for (const d of [NETNS_DIRS.lib, NETNS_DIRS.run]) if (await exists(d)) left.push(d);
    return left;
  });
  await survey('Node objects', () => nodesWithPrefix(api, NETNS_PREFIX));
  await survey('Deployment pods in the API', async () => {
    // Force-deleted at cleanup; the ReplicaSet may have made one more before it saw its deletion.
    for (let i = 0; i < 20; i++) {
      if ((await spreadPods(api)).length === 0) return [];
      await forceDeletePods(
        api,
        [1, 2, 3].map((n) => nodeLayout(n).name),
      );
      await sleep(500);
    }
    return (await spreadPods(api)).map((p) => p.metadata.name ?? '?');
  });
  return out;
}
