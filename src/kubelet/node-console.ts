/**
 * Wires the node console (src/console) to a running kubelet: pods from the kubelet, the node from
 * the Node object (cluster mode) or from the kubelet's own checks (standalone), usage from the
 * Summary API, events from the ring the recorders fill.
 */
import { release } from 'node:os';
import {
  clusterNodeView,
  createNodeConsole,
  standaloneNodeView,
  usageFromSummary,
  type EventRing,
  type NodeConsole,
} from '../console/index.ts';
import type { Kubelet } from './kubelet.ts';
import { goArch } from './node-view.ts';
import type { Node } from '../node/types.ts';
import { requestUser } from '../server/index.ts';
import type { StatsProvider } from '../stats/index.ts';
import { untilAborted } from '../util/abort.ts';
import type { Logger } from '../util/logger.ts';

export function buildNodeConsole(opts: {
  nodeName: string;
  version: string;
  kubelet: Kubelet;
  /** Cluster mode: the Node object as last written. */
  apiNode?: () => Node | undefined;
  machine: { milliCPU: number; memory: number; pods: number };
  stats: Pick<StatsProvider, 'summary'>;
  events: EventRing;
  logger: Logger;
}): NodeConsole {
  const { kubelet } = opts;
  return createNodeConsole({
    source: {
      pods: () => kubelet.pods(),
      node: () => {
        const n = opts.apiNode?.();
        if (n) return clusterNodeView(n);
        return standaloneNodeView({
          name: opts.nodeName,
          runtimeReady: kubelet.runtimeReady(),
          pressure: kubelet.pressure(),
          milliCPU: opts.machine.milliCPU,
          memoryBytes: opts.machine.memory,
          pods: opts.machine.pods,
          info: {
            kubeletVersion: opts.version,
            containerRuntimeVersion: kubelet.runtimeVersion(),
            kernelVersion: release(),
            architecture: goArch(),
          },
        });
      },
      usage: async (signal) => usageFromSummary(await untilAborted(opts.stats.summary(), signal)),
    },
    events: opts.events,
    logger: opts.logger,
    // The user the listener admitted: one user holds at most a few of the console's stream slots.
    userOf: (req) => requestUser(req)?.name,
  });
}
