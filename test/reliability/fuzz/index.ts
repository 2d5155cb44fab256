/** Every fuzzed input surface of the reliability suite. */
import type { FuzzSurface } from '../scenario.ts';

export const SURFACES: readonly FuzzSurface[] = [];
