/** Every fault scenario of the reliability suite, in the order the runner takes them. */
import type { Scenario } from '../scenario.ts';
import { limitsScenario } from './limits.ts';

export const SCENARIOS: readonly Scenario[] = [limitsScenario];
