/**
 * Every setting of the compiled config reaches code outside src/config that reads it, or is on the
 * not-implemented list (then it is not in the compiled config at all): a setting can no longer be
 * parsed, shown in /configz and ignored, as `registerNode`, `--resolv-conf` and
 * `--pod-infra-container-image` once were. "Reads it" is checked in the source: a property access
 * `.name` in a non-test file outside src/config.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { KubeletConfig } from '../config/index.ts';
import { testKubeletConfig } from '../config/testing.ts';

type OptionalKey = {
  [K in keyof KubeletConfig]-?: undefined extends KubeletConfig[K] ? K : never;
}[keyof KubeletConfig];

/** The optional settings (absent from a default config); the type makes the list complete. */
const OPTIONAL: Record<OptionalKey, true> = {
  configFile: true,
  staticPodPath: true,
  staticPodURL: true,
  hostnameOverride: true,
  nodeIP: true,
  consoleAddress: true,
  kubeconfig: true,
  bootstrapKubeconfig: true,
  maxParallelImagePulls: true,
};

/** Settings the compile step folds into another one, which is what the code reads. */
const FOLDED: Readonly<Record<string, string>> = {
  serializeImagePulls: 'maxParallelImagePulls (1 when set)',
  hostnameOverride: 'nodeName (the Node name, its hostname label and Hostname address)',
  // Not a setting: the file the settings came from (relative paths in it resolve against it).
  configFile: 'the compile step only',
};

/**
 * Settings whose promise holds without code reading them, each with the reason: checked, kept and
 * shown in /configz, never warned about.
 */
const MET_BY_DESIGN: Readonly<Record<string, string>> = {
  logFlushFrequencyMs:
    '"the longest a line waits to be written": every log line is written whole when logged ' +
    "(util/logger.ts), as klog writes to stderr; upstream's flush reaches only klog's log files",
};

const SRC = join(import.meta.dirname, '..');

async function productionSources(): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(SRC, { recursive: true, withFileTypes: true })) {
    const file = join(entry.parentPath, entry.name);
    if (!entry.isFile() || !file.endsWith('.ts')) continue;
    if (file.startsWith(join(SRC, 'config') + '/')) continue;
    if (file.endsWith('.test.ts') || file.endsWith('/testing.ts')) continue;
    out.push(await readFile(file, 'utf8'));
  }
  return out;
}

/** The setting's names: top-level keys, and the server settings' nested keys. */
function settingNames(): string[] {
  const c = testKubeletConfig();
  const names = [...Object.keys(c), ...Object.keys(OPTIONAL)].filter((k) => k !== 'server');
  const s = c.server;
  names.push(...Object.keys(s).filter((k) => k !== 'authentication' && k !== 'authorization'));
  names.push(...Object.keys(s.authentication), ...Object.keys(s.authorization));
  return [...new Set(names)];
}

describe('the compiled config', () => {
  it('has every setting read by code outside src/config (or folded into one that is, or met by design)', async () => {
    const sources = await productionSources();
    const unread = settingNames().filter((name) => {
      if (FOLDED[name] || MET_BY_DESIGN[name]) return false;
      const access = new RegExp(`\\.${name}\\b`);
      return !sources.some((text) => access.test(text));
    });
    assert.deepEqual(unread, [], 'settings nothing reads: implement them or move them to not-implemented.ts');
  });
});
