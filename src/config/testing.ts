/**
 * Test fixtures for the config (not exported from the index, not part of the build): a compiled
 * config with upstream's defaults for a node `node-a`, with the listeners off, so a test kubelet
 * assembled from it (`newKubelet`) binds no port.
 */
import assert from 'node:assert/strict';
import { hasCode } from '../util/errors.ts';
import { compileConfig } from './compile.ts';
import {
  decodeKubeletConfiguration,
  type CompileOptions,
  type DecodedConfigFile,
  type FlagValues,
  type KubeletConfig,
} from './kubelet-config.ts';

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

/** The type header of a KubeletConfiguration file. */
export const HEADER = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';
/** The compile options of the config tests: hostname `Node-A`, working directory `/work`. */
export const COMPILE_OPTS: CompileOptions = { hostname: () => 'Node-A', cwd: '/work' };

/** `fields` decoded as a v1beta1 KubeletConfiguration read from `filePath`. */
export function decodeFields(
  fields: Record<string, unknown>,
  filePath = '/etc/kubernetes/kubelet.yaml',
): DecodedConfigFile {
  return decodeKubeletConfiguration(
    { apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...fields },
    filePath,
  );
}

/** `fields` (no file when undefined) and `flags` compiled with {@link COMPILE_OPTS}. */
export function compileFields(fields: Record<string, unknown> | undefined, flags: FlagValues = {}) {
  return compileConfig(fields === undefined ? undefined : decodeFields(fields), flags, COMPILE_OPTS);
}

/** Asserts `fn` throws an InvalidArgument KubeletError whose message matches every pattern. */
export function assertInvalid(fn: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(hasCode(err, 'InvalidArgument'), `expected InvalidArgument, got ${String(err)}`);
    for (const p of patterns) assert.match(String(err), p);
    return true;
  });
}
