/**
 * The Prometheus text exposition (format 0.0.4) read into metric families, and two scrapes'
 * families compared by name, type, label names and histogram bucket bounds: what the metric parity
 * test (test/integration/metrics-parity.test.ts) diffs between tskubelet and the upstream kubelet.
 * Upstream counterpart: prometheus/common expfmt.TextParser (the families only, not the values).
 */

/** One metric family as a scrape shows it; values are left out. */
export interface MetricFamily {
  name: string;
  /** `counter`, `gauge`, `histogram`, `summary` or `untyped` (no TYPE line). */
  type: string;
  help: string;
  /** Every label name any sample of the family carries, sorted; `le` and `quantile` left out. */
  labelNames: string[];
  /** A histogram's bucket bounds (`le`, `+Inf` last), in the order of the first series. */
  buckets: string[];
  samples: number;
}

const SUFFIXES: Record<string, readonly string[]> = {
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['_sum', '_count'],
};

/** The label names of `{a="x",b="y"}` (values may hold escaped quotes, commas and braces). */
function parseLabels(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf('=', i);
    if (eq < 0) break;
    const name = text.slice(i, eq).trim().replace(/^,/, '').trim();
    let j = eq + 1;
    if (text[j] !== '"') throw new Error(`label ${name}: value not quoted in {${text}}`);
    j++;
    let value = '';
    while (j < text.length && text[j] !== '"') {
      if (text[j] === '\\') j++;
      value += text[j] ?? '';
      j++;
    }
    out.set(name, value);
    i = j + 1;
    while (i < text.length && (text[i] === ',' || text[i] === ' ')) i++;
  }
  return out;
}

/** Splits a sample line into its metric name and labels (the value and timestamp are ignored). */
function parseSample(line: string): { name: string; labels: Map<string, string> } {
  const brace = line.indexOf('{');
  const space = line.indexOf(' ');
  if (brace < 0 || (space >= 0 && space < brace)) return { name: line.slice(0, space), labels: new Map() };
  const close = line.lastIndexOf('}');
  return { name: line.slice(0, brace), labels: parseLabels(line.slice(brace + 1, close)) };
}

/** The families of one scrape, by name. Families with HELP/TYPE but no sample are kept (samples 0). */
export function parseFamilies(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const labelSets = new Map<string, Set<string>>();
  const family = (name: string): MetricFamily => {
    let f = families.get(name);
    if (!f) {
      f = { name, type: 'untyped', help: '', labelNames: [], buckets: [], samples: 0 };
      families.set(name, f);
      labelSets.set(name, new Set());
    }
    return f;
  };
  /** The family a sample name belongs to: itself, or a histogram/summary it is a series of. */
  const owner = (sample: string): MetricFamily => {
    for (const [type, suffixes] of Object.entries(SUFFIXES)) {
      for (const s of suffixes) {
        if (!sample.endsWith(s)) continue;
        const f = families.get(sample.slice(0, -s.length));
        if (f?.type === type) return f;
      }
    }
    return family(sample);
  };
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const meta = /^#\s+(HELP|TYPE)\s+(\S+)\s?(.*)$/.exec(line);
    if (meta) {
      const f = family(meta[2] ?? '');
      if (meta[1] === 'HELP') f.help = (meta[3] ?? '').replace(/\\n/g, '\n').replace(/\\\\/g, '\\');
      else f.type = meta[3] ?? 'untyped';
      continue;
    }
    if (line.startsWith('#')) continue;
    const { name, labels } = parseSample(line);
    const f = owner(name);
    f.samples++;
    const names = labelSets.get(f.name) as Set<string>;
    for (const l of labels.keys()) {
      if ((l === 'le' && f.type === 'histogram') || (l === 'quantile' && f.type === 'summary')) continue;
      names.add(l);
    }
    const le = labels.get('le');
    if (
      f.type === 'histogram' &&
      name === `${f.name}_bucket` &&
      le !== undefined &&
      !f.buckets.includes(le)
    ) {
      f.buckets.push(le);
    }
  }
  for (const f of families.values()) f.labelNames = [...(labelSets.get(f.name) ?? [])].sort();
  return families;
}

/** How one family differs between the reference scrape and the compared one. */
export type FamilyDiff =
  | { kind: 'missing'; name: string; reference: MetricFamily }
  | { kind: 'extra'; name: string; compared: MetricFamily }
  | { kind: 'type' | 'labels' | 'buckets' | 'help'; name: string; reference: string; compared: string };

/**
 * Every difference of `compared` against `reference`: families only one has, and for the families
 * both have a different type, label names, bucket bounds or help text. Families `reference`
 * declares without a sample are skipped (a Go vector with no child prints nothing at all).
 */
export function diffFamilies(
  reference: ReadonlyMap<string, MetricFamily>,
  compared: ReadonlyMap<string, MetricFamily>,
): FamilyDiff[] {
  const out: FamilyDiff[] = [];
  for (const [name, r] of reference) {
    const c = compared.get(name);
    if (!c) {
      if (r.samples > 0) out.push({ kind: 'missing', name, reference: r });
      continue;
    }
    const pairs: [FamilyDiff['kind'], string, string][] = [
      ['type', r.type, c.type],
      ['labels', r.labelNames.join(','), c.labelNames.join(',')],
      ['buckets', r.buckets.join(','), c.buckets.join(',')],
      ['help', r.help, c.help],
    ];
    for (const [kind, a, b] of pairs) {
      // A family with no sample shows no labels or buckets: nothing to compare.
      if ((kind === 'labels' || kind === 'buckets') && (r.samples === 0 || c.samples === 0)) continue;
      if (a !== b) out.push({ kind, name, reference: a, compared: b } as FamilyDiff);
    }
  }
  for (const [name, c] of compared) {
    if (!reference.has(name) && c.samples > 0) out.push({ kind: 'extra', name, compared: c });
  }
  return out;
}
