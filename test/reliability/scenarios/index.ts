/** Every fault scenario of the reliability suite, in the order the runner takes them. */
import type { Scenario } from '../scenario.ts';
import { apiOutage } from './api-outage.ts';
import { hostileApi } from './hostile-api.ts';

export const SCENARIOS: readonly Scenario[] = [apiOutage, hostileApi];
