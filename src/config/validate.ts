/**
 * Value checks of the configuration, one per kind of value. Each takes the chosen value with the
 * label it came from (`--max-pods` for a flag, `maxPods` for a file field) and appends one
 * message per problem to `errors`; none throws. The field table (`fields.ts`) names the check of
 * each field; checks that need two fields at once live in `compile.ts`.
 */
import { parseVmodule } from '../util/logger.ts';
import { isIP } from 'node:net';
import path from 'node:path';
import { isDNSDomainName, labelValueProblems, qualifiedNameProblems } from '../api/names.ts';
import { sysctlPatternProblems } from '../api/sysctl-names.ts';
import type { Taint, TaintEffect } from './kubelet-config.ts';
import type { RawTaint } from './raw.ts';
import { CHANGE_DETECTION_STRATEGIES } from './defaults.ts';

/** A value after flag-over-file precedence and defaulting, with where it came from. */
export interface Chosen<T> {
  readonly value: T;
  /** `--flag` when a flag gave it, else the file field's path. */
  readonly label: string;
  /** A flag gave it. */
  readonly fromFlag: boolean;
  /** A flag or the file gave it (false: the default). */
  readonly given: boolean;
  /** The value as written, for messages about durations (`"-1s"`); undefined for the default. */
  readonly text?: string;
}

export type Check<T> = (chosen: Chosen<T>, errors: string[]) => void;

/** The effects a node taint may have (core/v1 TaintEffect). */
export const TAINT_EFFECTS: readonly TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

export const positiveDuration: Check<number> = (c, errors) => {
  if (c.value <= 0) errors.push(`${c.label}: ${JSON.stringify(c.text)} must be greater than 0`);
};

export const nonNegativeDuration: Check<number> = (c, errors) => {
  if (c.value < 0) errors.push(`${c.label}: ${JSON.stringify(c.text)} must not be negative`);
};

/** A duration that is 0 (off) or at least one second (upstream's rule for the shutdown grace periods). */
export const zeroOrAtLeastOneSecond: Check<number> = (c, errors) => {
  if (c.value < 0) errors.push(`${c.label}: ${JSON.stringify(c.text)} must not be negative`);
  else if (c.value > 0 && c.value < 1000)
    errors.push(`${c.label}: ${JSON.stringify(c.text)} must be either 0 or at least 1s`);
};

export const nonNegative: Check<number> = (c, errors) => {
  if (c.value < 0) errors.push(`${c.label}: ${c.value} must not be a negative number`);
};

/** A percentage (upstream utilvalidation.IsInRange(v, 0, 100)). */
export const percent: Check<number> = (c, errors) => {
  if (c.value < 0 || c.value > 100)
    errors.push(`${c.label}: ${c.value} must be between 0 and 100, inclusive`);
};

export const positive: Check<number> = (c, errors) => {
  if (c.value <= 0) errors.push(`${c.label}: ${c.value} must be greater than 0`);
};

export function checkPort(zeroAllowed: boolean): Check<number> {
  return ({ value, label }, errors) => {
    if (zeroAllowed && value === 0) return;
    if (!Number.isInteger(value) || value < 1 || value > 65535) {
      errors.push(
        `${label}: ${value} must be between ${zeroAllowed ? '0 (disabled)' : '1'} and 65535, inclusive`,
      );
    }
  };
}

export const checkIP: Check<string> = (c, errors) => {
  if (isIP(c.value) === 0) errors.push(`${c.label}: ${JSON.stringify(c.value)} is not a valid IP address`);
};

export const checkIPs: Check<readonly string[]> = (c, errors) => {
  for (const ip of c.value) {
    if (isIP(ip) === 0) errors.push(`${c.label}: ${JSON.stringify(ip)} is not a valid IP address`);
  }
};

/** One IP, or a dual-stack pair (one IPv4, one IPv6), comma-separated (upstream --node-ip). */
export const checkNodeIP: Check<string> = ({ value, label }, errors) => {
  const parts = value.split(',').map((p) => p.trim());
  const families = parts.map((p) => isIP(p));
  if (parts.length > 2 || families.some((f) => f === 0)) {
    errors.push(
      `${label}: ${JSON.stringify(value)} must be an IP address or a comma-separated IPv4/IPv6 pair`,
    );
  } else if (parts.length === 2 && families[0] === families[1]) {
    errors.push(`${label}: ${JSON.stringify(value)}: a dual-stack pair needs one IPv4 and one IPv6 address`);
  }
};

/** An http or https URL; empty means none. */
export const checkURL: Check<string> = (c, errors) => {
  if (c.value === '') return;
  let url: URL;
  try {
    url = new URL(c.value);
  } catch {
    errors.push(`${c.label}: ${JSON.stringify(c.value)} is not a valid URL`);
    return;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    errors.push(`${c.label}: ${JSON.stringify(c.value)} must be an http or https URL`);
  }
};

/** RFC 9110 token characters for header names; values must not carry line breaks or NUL. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_HEADER_VALUE = /[\r\n\0]/;

export const checkHeaders: Check<Readonly<Record<string, readonly string[]>>> = (c, errors) => {
  for (const [name, values] of Object.entries(c.value)) {
    if (!HEADER_NAME.test(name))
      errors.push(`${c.label}: ${JSON.stringify(name)} is not a valid HTTP header name`);
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'string')) {
      errors.push(`${c.label}: values of ${JSON.stringify(name)} must be a list of strings`);
    } else if (values.some((v) => BAD_HEADER_VALUE.test(v))) {
      errors.push(`${c.label}: a value of ${JSON.stringify(name)} contains a line break or NUL`);
    }
  }
};

/** Upstream: podLogsDir must be absolute, normalized (filepath.Clean) and ASCII-only. */
export const checkPodLogsDir: Check<string> = ({ value: dir, label }, errors) => {
  if (!path.isAbsolute(dir)) errors.push(`${label}: ${JSON.stringify(dir)} must be an absolute path`);
  else if (cleanPath(dir) !== dir) errors.push(`${label}: ${JSON.stringify(dir)} must be normalized`);
  // eslint-disable-next-line no-control-regex
  if (!/^[\x00-\x7f]*$/.test(dir))
    errors.push(`${label}: ${JSON.stringify(dir)} must contain ASCII characters only`);
};

/** Go's filepath.Clean for absolute POSIX paths: normalized, no trailing slash except the root. */
export function cleanPath(p: string): string {
  const n = path.posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

/** A DNS domain such as `cluster.local`; empty means none. */
export const checkDomain: Check<string> = (c, errors) => {
  if (c.value !== '' && !isDNSDomainName(c.value)) {
    errors.push(
      `${c.label}: ${JSON.stringify(c.value)} is not a valid DNS domain (lowercase DNS-1123 subdomain)`,
    );
  }
};

/** Upstream refuses to start with such a list (sysctl.NewAllowlist); reported with the rest here. */
export const checkSysctlPatterns: Check<readonly string[]> = (c, errors) => {
  for (const problem of sysctlPatternProblems(c.value)) errors.push(`${c.label}: ${problem}`);
};

/** Upstream's three ResourceChangeDetectionStrategy values (NewMainKubelet refuses any other). */
export const checkChangeDetectionStrategy: Check<string> = (c, errors) => {
  if (!(CHANGE_DETECTION_STRATEGIES as readonly string[]).includes(c.value)) {
    errors.push(
      `${c.label}: ${JSON.stringify(c.value)} is not a change detection strategy (want ${CHANGE_DETECTION_STRATEGIES.map((s) => `"${s}"`).join(', ')})`,
    );
  }
};

/** `--vmodule`: klog's `pattern=N,...` (parseVmodule's rule; its message names the entry). */
export const checkVmodule: Check<string> = (c, errors) => {
  try {
    parseVmodule(c.value);
  } catch (err) {
    errors.push(
      `${c.label}: ${err instanceof Error ? err.message.replace(/^--vmodule: /, '') : String(err)}`,
    );
  }
};

export const checkLogFormat: Check<string> = (c, errors) => {
  if (c.value !== 'json' && c.value !== 'text') {
    errors.push(`${c.label}: ${JSON.stringify(c.value)} is not supported (want "json" or "text")`);
  }
};

/**
 * Only unix sockets are supported (as upstream on Linux). A bare absolute path is accepted and
 * rewritten to `unix://<path>` with a warning, as upstream's fallback-protocol parsing does.
 */
export function normalizeRuntimeEndpoint(
  chosen: Chosen<string>,
  errors: string[],
  warnings: string[],
): string {
  const { value, label } = chosen;
  if (value === '') {
    errors.push(`${label}: must not be empty`);
    return value;
  }
  if (value.startsWith('unix://')) {
    const socketPath = value.slice('unix://'.length);
    if (!path.isAbsolute(socketPath)) {
      errors.push(
        `${label}: ${JSON.stringify(value)} must name an absolute socket path, e.g. unix:///run/x.sock`,
      );
    }
    return value;
  }
  if (path.isAbsolute(value)) {
    const normalized = `unix://${value}`;
    warnings.push(
      `${label}: ${JSON.stringify(value)} has no scheme (deprecated upstream); using "${normalized}"`,
    );
    return normalized;
  }
  errors.push(`${label}: ${JSON.stringify(value)} is not supported; use unix:///absolute/path/to/socket`);
  return value;
}

/** A QPS or burst of 0 becomes client-go's fallback, as upstream (it hands 0 to client-go). */
export function clientLimit(value: number, clientGoFallback: number): number {
  return value === 0 ? clientGoFallback : value;
}

/**
 * Validates taints from the file or `--register-with-taints` (upstream CheckTaintValidation, plus
 * what the API server would refuse at registration: a missing effect, a duplicate key+effect).
 */
export const checkTaints: Check<readonly RawTaint[]> = (chosen, errors) => {
  const seen = new Set<string>();
  chosen.value.forEach((raw, i) => {
    const where = chosen.fromFlag
      ? `${chosen.label}: taint ${JSON.stringify(formatTaint(raw))}`
      : `${chosen.label}[${i}]`;
    for (const problem of qualifiedNameProblems(raw.key)) errors.push(`${where}: key ${problem}`);
    for (const problem of labelValueProblems(raw.value ?? '')) errors.push(`${where}: value ${problem}`);
    if (raw.effect === '') {
      errors.push(`${where}: effect is required (one of ${TAINT_EFFECTS.join(', ')})`);
    } else if (!TAINT_EFFECTS.some((e) => e === raw.effect)) {
      errors.push(`${where}: effect ${JSON.stringify(raw.effect)} is not one of ${TAINT_EFFECTS.join(', ')}`);
    }
    const identity = `${raw.key}:${raw.effect}`;
    if (seen.has(identity)) errors.push(`${where}: duplicate taint (same key and effect as an earlier one)`);
    seen.add(identity);
  });
};

/** Checked taints as the Node gets them: an empty value is left out. */
export function toTaints(raw: readonly RawTaint[]): Taint[] {
  const out: Taint[] = [];
  for (const t of raw) {
    const effect = TAINT_EFFECTS.find((e) => e === t.effect);
    const value = t.value ?? '';
    if (effect !== undefined) out.push(value === '' ? { key: t.key, effect } : { key: t.key, value, effect });
  }
  return out;
}

function formatTaint(t: RawTaint): string {
  return `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`;
}
