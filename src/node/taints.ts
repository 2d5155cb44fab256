import { KubeletError } from '../util/errors.ts';
import type { Taint, TaintEffect } from './types.ts';

const EFFECTS: readonly TaintEffect[] = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
// Qualified name: optional DNS subdomain prefix + '/' + name of at most 63 characters.
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

function validKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return NAME.test(key);
  const prefix = key.slice(0, slash);
  return prefix.length <= 253 && PREFIX.test(prefix) && NAME.test(key.slice(slash + 1));
}

/**
 * Parses `--register-with-taints` entries, `key=value:Effect` or `key:Effect` (upstream
 * taints.ParseTaints). Throws InvalidArgument naming the bad entry; a key+effect given twice is
 * an error, as upstream.
 */
export function parseTaints(specs: readonly string[]): Taint[] {
  const out: Taint[] = [];
  for (const spec of specs) {
    const colon = spec.lastIndexOf(':');
    const bad = (why: string) =>
      new KubeletError(
        'InvalidArgument',
        'parse taint',
        `invalid taint spec ${JSON.stringify(spec)}: ${why}`,
      );
    if (colon < 0) throw bad('want key=value:effect or key:effect');
    const effect = spec.slice(colon + 1) as TaintEffect;
    if (!EFFECTS.includes(effect)) throw bad(`effect must be one of ${EFFECTS.join(', ')}`);
    const kv = spec.slice(0, colon);
    const eq = kv.indexOf('=');
    const key = eq < 0 ? kv : kv.slice(0, eq);
    const value = eq < 0 ? undefined : kv.slice(eq + 1);
    if (!validKey(key)) throw bad(`invalid key ${JSON.stringify(key)}`);
    if (value !== undefined && !VALUE.test(value)) throw bad(`invalid value ${JSON.stringify(value)}`);
    if (out.some((t) => t.key === key && t.effect === effect)) throw bad('duplicated key and effect');
    out.push(value === undefined || value === '' ? { key, effect } : { key, value, effect });
  }
  return out;
}
