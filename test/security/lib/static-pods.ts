/**
 * The attacker suite's static pod probes: a manifest with one defect upstream's ValidatePodCreate
 * refuses (a `..` hostPath, an unknown hostPath type, Bidirectional propagation in an unprivileged
 * container) dropped into the manifest directory; the pod must not run, the kubelet must say why
 * and stay healthy. No upstream counterpart.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Pod } from '../../../src/api/types.ts';
import { LABEL_POD_NAME } from '../../../src/config/defaults.ts';
import { sleep } from '../../../src/util/abort.ts';
import { IMAGE } from '../../kit/bed.ts';
import { fail, type Observation } from './observation.ts';
import { runHttp } from './prober.ts';
import type { LiveTarget } from './target.ts';

/** The manifest of a static pod with one defect each (upstream ValidatePodCreate rejects all three). */
export function defectivePod(defect: 'hostpath-dotdot' | 'hostpath-type' | 'bidirectional'): Pod {
  const hostPath =
    defect === 'hostpath-dotdot'
      ? { path: '/tmp/../etc' }
      : defect === 'hostpath-type'
        ? { path: '/tmp', type: 'Sideways' }
        : { path: '/tmp', type: 'Directory' };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `bad-${defect}`, namespace: 'default' },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'main',
          image: IMAGE,
          command: ['sleep', '3600'],
          volumeMounts: [
            {
              name: 'host',
              mountPath: '/host',
              ...(defect === 'bidirectional' ? { mountPropagation: 'Bidirectional' } : {}),
            },
          ],
        },
      ],
      volumes: [{ name: 'host', hostPath }],
    },
  };
}

export async function staticPodCheck(
  defect: 'hostpath-dotdot' | 'hostpath-type' | 'bidirectional',
  wantEvent: boolean,
  t: LiveTarget,
): Promise<Observation> {
  if (!t.manifests) return fail('no static pod directory');
  const pod = defectivePod(defect);
  // A name of its own for the event probe: a file the kubelet has not complained about yet.
  const name = `bad-${defect}${wantEvent ? '-event' : ''}`;
  pod.metadata.name = name;
  const file = `${name}.yaml`;
  const podName = `${name}-${t.nodeName}`;
  await writeFile(join(t.manifests, file), stringify(pod));
  try {
    // Upstream reads the directory every 20 s; tskubelet's bed nodes every second.
    const deadline = Date.now() + (t.kubelet === 'upstream' ? 45_000 : 15_000);
    let logged: string | undefined;
    let ran = false;
    while (Date.now() < deadline) {
      const log = await readFile(t.logFile, 'utf8');
      logged = log
        .split('\n')
        .find((l) => l.includes(file) || (l.includes(podName) && /invalid|reject/i.test(l)));
      const sandboxes = await t.cri.runtime.listPodSandbox({ labelSelector: { [LABEL_POD_NAME]: podName } });
      ran = sandboxes.length > 0;
      if (logged || ran) break;
      await sleep(500);
    }
    // Give a sandbox that is on its way the time to appear.
    await sleep(3_000);
    ran ||= (await t.cri.runtime.listPodSandbox({ labelSelector: { [LABEL_POD_NAME]: podName } })).length > 0;
    const healthz = await runHttp({
      op: 'http',
      url: `http://127.0.0.1:${t.ports.healthz ?? 0}/healthz`,
      method: 'GET',
    });
    const events = await t.events().catch((err: unknown) => [`(events unreadable: ${String(err)})`]);
    const event = events.find(
      (e) => e.startsWith('Warning ') && (e.includes(podName) || e.includes(file) || e.includes(name)),
    );
    const parts = [
      ran ? 'RAN' : 'not run',
      logged ? 'logged' : 'not logged',
      event ? 'event' : 'no event',
      healthz.status === 200 ? 'healthy' : `healthz ${healthz.status ?? healthz.error ?? ''}`,
    ];
    return {
      ok: !ran && logged !== undefined && healthz.status === 200 && (!wantEvent || event !== undefined),
      observed: wantEvent
        ? event
          ? 'a Warning event'
          : `no Warning event (${parts.join(', ')})`
        : parts.filter((x) => !/event/.test(x)).join(', '),
      details: [logged?.slice(0, 300) ?? '', event ?? ''],
    };
  } finally {
    await rm(join(t.manifests, file), { force: true });
  }
}
