/**
 * Linux CPU lists (`0-3,8,10-11`), as upstream's k8s.io/utils/cpuset Parse reads them (the
 * `--reserved-cpus` value, `/sys/devices/system/cpu/online`).
 */

/** The result of parsing a CPU list: the sorted, distinct CPU ids, or what is wrong with it. */
export type CPUListResult = { ok: true; cpus: number[] } | { ok: false; error: string };

const ID = /^[0-9]+$/;
/** Beyond any kernel's NR_CPUS; a bound that keeps a typo (`0-99999999`) from allocating forever. */
const MAX_CPU_ID = 65_535;

/** Parses a CPU list; the empty string is the empty set (as cpuset.Parse). */
export function parseCPUList(text: string): CPUListResult {
  const cpus = new Set<number>();
  if (text.trim() === '') return { ok: true, cpus: [] };
  for (const raw of text.trim().split(',')) {
    const part = raw.trim();
    const bounds = part.split('-');
    if (bounds.length > 2 || bounds.some((b) => !ID.test(b))) {
      return { ok: false, error: `invalid CPU list element ${JSON.stringify(part)}` };
    }
    const lo = Number(bounds[0]);
    const hi = Number(bounds[1] ?? bounds[0]);
    if (lo > hi) return { ok: false, error: `invalid range ${JSON.stringify(part)} (${lo} > ${hi})` };
    if (hi > MAX_CPU_ID) return { ok: false, error: `CPU id ${hi} is beyond ${MAX_CPU_ID}` };
    for (let c = lo; c <= hi; c++) cpus.add(c);
  }
  return { ok: true, cpus: [...cpus].sort((a, b) => a - b) };
}

/** A set of CPU ids in the kernel's list form (`0-3,8`), as cpuset's String. */
export function formatCPUList(cpus: readonly number[]): string {
  const sorted = [...new Set(cpus)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && (sorted[j + 1] as number) === (sorted[j] as number) + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}
