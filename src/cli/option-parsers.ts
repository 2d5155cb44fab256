/** Option parsers shared by the `run` command's flag groups: pflag's value syntax on commander. */
import { InvalidArgumentError, Option } from 'commander';

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

/** Go's strconv.ParseBool. */
export function parseGoBool(value: string): boolean {
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return false;
  throw new InvalidArgumentError('not a boolean (true or false)');
}

export function intOption(flags: string, description: string): Option {
  return new Option(flags, description).argParser(parseInt32);
}

/** `--flag` means true; `--flag=false` (pflag style) is accepted too. */
export function boolOption(flag: string, description: string): Option {
  return new Option(`${flag} [bool]`, description).argParser(parseGoBool);
}
