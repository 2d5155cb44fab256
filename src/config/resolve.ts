/**
 * Flag-over-file precedence and defaulting of one setting of the field table: a flag given on the
 * command line wins as given; else the file's value, unless it is zero or empty and the row says
 * that means the default; else the default. Durations become milliseconds; the row's check runs.
 */
import { tryParseGoDuration } from './duration.ts';
import type { CompiledKind, FieldSpec } from './fields.ts';
import type { Chosen } from './validate.ts';

/** The setting's value: never undefined when the row has a default. */
export type ValueOf<S extends FieldSpec> = S extends { readonly default: unknown }
  ? CompiledKind<S['kind']>
  : CompiledKind<S['kind']> | undefined;

/** The value at a dotted path of a decoded file (`logging.format`), or undefined. */
export function fileValueAt(raw: object, filePath: string | undefined): unknown {
  if (filePath === undefined) return undefined;
  let at: unknown = raw;
  for (const segment of filePath.split('.')) {
    if (typeof at !== 'object' || at === null) return undefined;
    at = (at as Record<string, unknown>)[segment];
  }
  return at;
}

/**
 * Chooses, converts and checks one setting. `flagValue` and `fileValue` must be of the row's kind
 * (the decoder and the flag parsers guarantee it); problems go to `errors`, each naming the flag
 * or the file field. `fallback` replaces the row's default (upstream derives a few defaults).
 */
export function resolveField<S extends FieldSpec>(
  spec: S,
  flagValue: unknown,
  fileValue: unknown,
  errors: string[],
  fallback?: unknown,
): Chosen<ValueOf<S>> {
  const flagLabel = spec.flag ? `--${spec.flag.name}` : '';
  const fileLabel = spec.file ?? flagLabel;
  const defaultChoice = { value: fallback ?? spec.default, label: fileLabel, fromFlag: false, given: false };
  let chosen: Chosen<unknown>;
  if (flagValue !== undefined) {
    const fromFlag = convert(spec, flagValue, flagLabel, true, errors);
    if (fromFlag === undefined) {
      return { ...defaultChoice, label: flagLabel, fromFlag: true, given: true } as Chosen<ValueOf<S>>;
    }
    chosen = fromFlag;
  } else if (fileValue !== undefined) {
    const fromFile = convert(spec, fileValue, fileLabel, false, errors);
    if (fromFile === undefined) return defaultChoice as Chosen<ValueOf<S>>;
    chosen = spec.fileZero === 'default' && isZero(fromFile.value) ? defaultChoice : fromFile;
  } else {
    chosen = defaultChoice;
  }
  if (chosen.value !== undefined) runCheck(spec, chosen, errors);
  // `convert` produced the row's compiled kind, or the value is the row's own default.
  return chosen as Chosen<ValueOf<S>>;
}

function convert(
  spec: FieldSpec,
  value: unknown,
  label: string,
  fromFlag: boolean,
  errors: string[],
): Chosen<unknown> | undefined {
  if (spec.kind !== 'duration') return { value, label, fromFlag, given: true };
  const text = String(value);
  const parsed = tryParseGoDuration(text);
  if (!parsed.ok) {
    errors.push(`${label}: ${parsed.reason}`);
    return undefined;
  }
  return { value: parsed.ms, label, fromFlag, given: true, text };
}

function isZero(value: unknown): boolean {
  return value === 0 || value === '';
}

function runCheck(spec: FieldSpec, chosen: Chosen<unknown>, errors: string[]): void {
  // Each row's check takes that row's compiled kind, which `chosen` holds.
  const check = spec.check as ((c: Chosen<unknown>, errors: string[]) => void) | undefined;
  check?.(chosen, errors);
}
