/**
 * Test fixtures for the config (not exported from the index, not part of the build): a compiled
 * config with upstream's defaults for a node `node-a`, with the listeners off, so a test kubelet
 * assembled from it (`newKubelet`) binds no port.
 */
import { compileConfig } from './compile.ts';
import type { KubeletConfig } from './kubelet-config.ts';

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** The defaults of every field (node `node-a`, no healthz, no kubelet API), then `overrides`. */
export function testKubeletConfig(overrides: Partial<Writable<KubeletConfig>> = {}): KubeletConfig {
  const { config } = compileConfig(undefined, {}, { hostname: () => 'node-a', cwd: '/' });
  return {
    ...config,
    healthzPort: 0,
    // No listener, no log rotation loop, no host cgroups, no eviction loop: a test asks for those.
    server: { ...config.server, enableServer: false, containerLogMaxSizeBytes: 0 },
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    evictionThresholds: [],
    ...overrides,
  };
}
