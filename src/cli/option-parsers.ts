/** Option parsers shared by the `run` command's flag groups: pflag's value syntax on commander. */
import { InvalidArgumentError, Option } from 'commander';
import type { RawTaint } from '../config/index.ts';

/**
 * Sets `out[key]` as an own property whatever the key: a plain assignment of `__proto__` would
 * replace the object's prototype instead (and `constructor` reads the inherited one), so a map
 * built from user text takes its keys this way.
 */
function setOwn<T>(out: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
}

function getOwn<T>(out: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(out, key) ? out[key] : undefined;
}

/**
 * One value of a pflag StringSlice flag (`--allowed-unsafe-sysctls`): comma-separated values taken
 * as written, an empty value adds nothing; repeated flags accumulate.
 */
export function parseStringSlice(value: string, previous: string[] | undefined): string[] {
  const values = value === '' ? [] : value.split(',');
  return [...(previous ?? []), ...values];
}

/** A decimal int32, as pflag's Int32Var reads it (`-v=3`, pflag style, reaches us as `=3`). */
export function parseInt32(value: string): number {
  const text = value.replace(/^=/, '').trim();
  if (!/^[+-]?\d+$/.test(text)) throw new InvalidArgumentError('not an integer');
  const n = Number(text);
  if (n < -(2 ** 31) || n >= 2 ** 31) throw new InvalidArgumentError('out of range for a 32-bit integer');
  return n;
}

/** A decimal int64 within JavaScript's safe integers (pflag Int64Var). */
export function parseInt64(value: string): number {
  const text = value.replace(/^=/, '').trim();
  if (!/^[+-]?\d+$/.test(text)) throw new InvalidArgumentError('not an integer');
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('out of range');
  return n;
}

const GO_TRUE = ['1', 't', 'T', 'true', 'TRUE', 'True'];
const GO_FALSE = ['0', 'f', 'F', 'false', 'FALSE', 'False'];

/** Whether Go's strconv.ParseBool takes the text. */
export function isGoBool(value: string): boolean {
  return GO_TRUE.includes(value) || GO_FALSE.includes(value);
}

/** Go's strconv.ParseBool. */
export function parseGoBool(value: string): boolean {
  if (GO_TRUE.includes(value)) return true;
  if (GO_FALSE.includes(value)) return false;
  throw new InvalidArgumentError('not a boolean (true or false)');
}

/** `--flag` means true; `--flag=false` (pflag style) is accepted too. */
export function boolOption(flag: string, description: string): Option {
  return new Option(`${flag} [bool]`, description).argParser(parseGoBool);
}

/**
 * One `--manifest-url-header` value, upstream's colon-separated multimap format: comma-separated
 * `name:value` pairs, split at the first colon, both sides trimmed, empty pairs skipped. Repeated
 * flags accumulate (`previous`); the first use replaces whatever the config file had.
 */
export function parseManifestURLHeader(
  value: string,
  previous: Record<string, string[]> | undefined,
): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(previous ?? {})) setOwn(out, k, [...v]);
  for (const pair of value.split(',')) {
    if (pair === '') continue;
    const colon = pair.indexOf(':');
    if (colon < 0)
      throw new InvalidArgumentError(`malformed pair ${JSON.stringify(pair)}, expected key:value`);
    const name = pair.slice(0, colon).trim();
    const headerValue = pair.slice(colon + 1).trim();
    const values = getOwn(out, name);
    if (values) values.push(headerValue);
    else setOwn(out, name, [headerValue]);
  }
  return out;
}

/**
 * One `--register-with-taints` value: comma-separated `key=value:Effect` or `key:Effect` (upstream
 * ParseTaints). Each use replaces the previous one, as upstream; an empty value means no taints.
 * Only the shape is checked here; key, value and effect are validated with the file's taints.
 * The removal form `key:Effect-` means nothing at registration (upstream silently drops it), so
 * it is refused.
 */
export function parseRegisterWithTaints(value: string): RawTaint[] {
  if (value === '') return [];
  return value.split(',').map((spec): RawTaint => {
    if (spec.endsWith('-')) {
      throw new InvalidArgumentError(
        `${JSON.stringify(spec)} is a taint removal, which registration cannot use`,
      );
    }
    const parts = spec.split(':');
    if (parts.length !== 2) {
      throw new InvalidArgumentError(
        `malformed taint ${JSON.stringify(spec)}, expected key=value:Effect or key:Effect`,
      );
    }
    const [keyValue = '', effect = ''] = parts;
    const kv = keyValue.split('=');
    if (kv.length > 2) {
      throw new InvalidArgumentError(`malformed taint ${JSON.stringify(spec)}: more than one "="`);
    }
    const [key = '', taintValue] = kv;
    return taintValue === undefined ? { key, effect } : { key, value: taintValue, effect };
  });
}

/**
 * upstream cliflag.MapStringString / LangleSeparatedMapStringString: comma-separated pairs split at
 * the first `sep`, both sides trimmed; a pair without it is an error; an empty value (`--eviction-hard=`)
 * gives an empty map. Repeated flags accumulate, a later key replaces an earlier one.
 */
export function mapStringStringParser(
  sep: '=' | '<',
): (value: string, previous: Record<string, string> | undefined) => Record<string, string> {
  return (value, previous) => {
    const out: Record<string, string> = { ...previous };
    for (const pair of value.split(',')) {
      if (pair.trim() === '') continue;
      const at = pair.indexOf(sep);
      if (at < 0)
        throw new InvalidArgumentError(`malformed pair, expect string${sep}string: ${JSON.stringify(pair)}`);
      setOwn(out, pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    return out;
  };
}

/**
 * One `--node-labels` value: comma-separated `key=value` pairs (upstream ConfigurationMap): split
 * at the first `=`, both sides trimmed, a pair without `=` gets an empty value, empty pairs are
 * skipped. Repeated flags accumulate, a later key replaces an earlier one. Validated when compiling.
 */
export function parseNodeLabels(
  value: string,
  previous: Record<string, string> | undefined,
): Record<string, string> {
  const out: Record<string, string> = { ...previous };
  for (const pair of value.split(',')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0) setOwn(out, pair.trim(), '');
    else setOwn(out, pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
  }
  return out;
}

/**
 * One `--feature-gates` value (upstream cliflag.MapStringBool): comma-separated `Name=bool` pairs,
 * both sides trimmed, empty pairs skipped, values in Go's ParseBool syntax. Repeated flags
 * accumulate, a later value of a gate replaces an earlier one. The messages are upstream's. Which
 * gates exist is checked when compiling (config/feature-gates.ts).
 */
export function parseFeatureGates(
  value: string,
  previous: Record<string, boolean> | undefined,
): Record<string, boolean> {
  const out: Record<string, boolean> = { ...previous };
  for (const pair of value.split(',')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0) throw new InvalidArgumentError('malformed pair, expect string=bool');
    const name = pair.slice(0, eq).trim();
    const text = pair.slice(eq + 1).trim();
    if (!isGoBool(text)) {
      throw new InvalidArgumentError(
        `invalid value of ${name}: ${text}, err: strconv.ParseBool: parsing ${JSON.stringify(text)}: invalid syntax`,
      );
    }
    setOwn(out, name, parseGoBool(text));
  }
  return out;
}
