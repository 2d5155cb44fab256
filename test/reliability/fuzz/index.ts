/** Every fuzzed input surface of the reliability suite. */
import type { FuzzSurface } from '../scenario.ts';
import { apiPodSurface } from './api-pod.ts';
import { kubeletApiSurface } from './kubelet-api.ts';
import { kubeletConfigSurface } from './kubelet-config.ts';
import { kubeletFlagsSurface } from './kubelet-flags.ts';
import { manifestFileSurface } from './manifest-file.ts';
import { manifestHttpSurface } from './manifest-http.ts';

export const SURFACES: readonly FuzzSurface[] = [
  manifestFileSurface,
  manifestHttpSurface,
  kubeletConfigSurface,
  kubeletFlagsSurface,
  apiPodSurface,
  kubeletApiSurface,
];
