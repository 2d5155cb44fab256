/**
 * The `--config-dir` drop-in directory (upstream cmd/kubelet/app/server.go
 * mergeKubeletConfigurations, kubelet 1.28+): every `*.conf` file under the directory, walked in
 * lexical order (subdirectories included, as filepath.WalkDir), is a KubeletConfiguration
 * (apiVersion and kind required, decoded and checked as the --config file is) merged over the
 * configuration so far as a JSON merge patch (RFC 7386): objects merge key by key (so maps such as
 * `evictionHard` and `featureGates` merge per key), lists and scalars are replaced. Flags still win
 * over the merged result (compile.ts). Without --config the drop-ins merge over the defaults.
 *
 * Differences: a `null` in a drop-in leaves the value as it was (our decoder reads null as "not
 * set", as for --config); relative paths in a drop-in resolve against the drop-in's own directory
 * (as for --config). Upstream 1.28-1.29 also wanted KUBELET_CONFIG_DROPIN_DIR_ALPHA set; 1.30+ does
 * not, nor does tskubelet.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { KubeletError, describeError, type ErrorCode } from '../util/errors.ts';
import { loadConfigFile } from './decode.ts';
import type { DecodedConfigFile, RawKubeletConfiguration } from './raw.ts';

/** The drop-in file suffix (upstream dropinFileExtension). */
export const DROP_IN_EXTENSION = '.conf';

/**
 * Merges the drop-ins of `dir` over `base` (the --config file, or undefined for none). Throws
 * `KubeletError` naming the directory or the file: a missing directory, an unreadable or invalid
 * drop-in.
 */
export async function mergeConfigDropIns(
  base: DecodedConfigFile | undefined,
  dir: string,
): Promise<DecodedConfigFile> {
  const files = await dropInFiles(dir);
  let raw: Record<string, unknown> = { ...(base?.raw ?? {}) };
  const warnings = [...(base?.warnings ?? [])];
  for (const file of files) {
    const dropIn = await loadConfigFile(file);
    raw = mergePatch(raw, { ...dropIn.raw });
    warnings.push(...dropIn.warnings);
  }
  // A merge of two decoded configurations is one: each leaf was read by its row's reader.
  const merged: RawKubeletConfiguration = raw;
  return { path: base?.path ?? dir, raw: merged, warnings, dropIns: files };
}

/** The `*.conf` files under `dir` (recursively), in filepath.WalkDir order: lexical per directory. */
export async function dropInFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (at: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(at, { withFileTypes: true });
    } catch (err) {
      const code: ErrorCode =
        (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'NotFound' : 'InvalidArgument';
      throw new KubeletError(code, `read config drop-in directory ${dir}`, describeError(err), {
        cause: err,
      });
    }
    // WalkDir sorts by name (byte order), files and directories together.
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (path.extname(entry.name) === DROP_IN_EXTENSION) out.push(full);
    }
  };
  await walk(dir);
  return out;
}

/** RFC 7386 merge of two decoded configurations: objects merge per key, anything else is replaced. */
export function mergePatch(
  target: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    const before = Object.hasOwn(out, key) ? out[key] : undefined;
    const merged = isObject(value) && isObject(before) ? mergePatch(before, value) : value;
    // defineProperty: a map key such as `__proto__` stays a key.
    Object.defineProperty(out, key, { value: merged, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
