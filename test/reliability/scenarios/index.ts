/** Every fault scenario of the reliability suite, in the order the runner takes them. */
import type { Scenario } from '../scenario.ts';
import { clockScenario } from './clock.ts';
import { containerdRestart } from './containerd-restart.ts';
import { diskFull } from './disk-full.ts';
import { kubeletKill } from './kubelet-kill.ts';

export const SCENARIOS: readonly Scenario[] = [kubeletKill, containerdRestart, diskFull, clockScenario];
