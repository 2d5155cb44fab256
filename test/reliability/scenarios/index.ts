/** Every fault scenario of the reliability suite, in the order the runner takes them. */
import type { Scenario } from '../scenario.ts';
import { apiOutage } from './api-outage.ts';
import { clockScenario } from './clock.ts';
import { containerdRestart } from './containerd-restart.ts';
import { diskFull } from './disk-full.ts';
import { hostileApi } from './hostile-api.ts';
import { kubeletKill } from './kubelet-kill.ts';
import { limitsScenario } from './limits.ts';
import { multiNode } from './multi-node.ts';

export const SCENARIOS: readonly Scenario[] = [
  kubeletKill,
  containerdRestart,
  apiOutage,
  hostileApi,
  diskFull,
  multiNode,
  limitsScenario,
  clockScenario,
];
