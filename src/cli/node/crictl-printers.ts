/**
 * crictl's printers for `tskubelet ps`, `images`, `stats`, `inspect` (kubernetes-sigs/cri-tools
 * cmd/crictl: container.go OutputContainers, image.go listImageCommand, container_stats.go
 * displayStats, container.go marshalContainerStatus + util.go outputStatusData; display.go's
 * tabwriter (minwidth 20, padding 3); util.go getTruncatedID (13 characters)), and the two
 * docker/go-units helpers they use (duration.go HumanDuration, size.go HumanSizeWithPrecision).
 * Pure functions of the CRI objects and the time: the commands fetch, these print.
 */
import type { Container, ContainerStats, ContainerStatus, Image } from '../../runtime/cri/index.ts';
import { tabwrite, type TabOptions } from './tabwriter.ts';

/** crictl display.go newDefaultTableDisplay: tabwriter.NewWriter(os.Stdout, 20, 1, 3, ' ', 0). */
export const CRICTL_TABS: TabOptions = { minWidth: 20, padding: 3 };

/** crictl util.go truncatedIDLen. */
const TRUNCATED_ID_LEN = 13;

const POD_NAME_LABEL = 'io.kubernetes.pod.name';
const POD_NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';

/** crictl getTruncatedID. */
export function truncatedID(id: string, prefix: string): string {
  const s = prefix && id.startsWith(prefix) ? id.slice(prefix.length) : id;
  return s.length > TRUNCATED_ID_LEN ? s.slice(0, TRUNCATED_ID_LEN) : s;
}

/** docker/go-units HumanDuration (duration.go), from milliseconds. */
export function unitsHumanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < 1) return 'Less than a second';
  if (seconds === 1) return '1 second';
  if (seconds < 60) return `${seconds} seconds`;
  const minutes = Math.trunc(ms / 60_000);
  if (minutes === 1) return 'About a minute';
  if (minutes < 60) return `${minutes} minutes`;
  const hours = Math.trunc(ms / 3_600_000 + 0.5);
  if (hours === 1) return 'About an hour';
  if (hours < 48) return `${hours} hours`;
  if (hours < 24 * 7 * 2) return `${Math.trunc(hours / 24)} days`;
  if (hours < 24 * 30 * 2) return `${Math.trunc(hours / 24 / 7)} weeks`;
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24 / 30)} months`;
  return `${Math.trunc(Math.trunc(ms / 3_600_000) / 24 / 365)} years`;
}

/** Go's `%.*g` (fmt, strconv 'g'): `prec` significant digits, trailing zeros dropped. */
export function goFormatG(v: number, prec: number): string {
  if (v === 0) return '0';
  const [mant = '', expStr = '0'] = v.toExponential(Math.max(0, prec - 1)).split('e');
  const exp = Number(expStr);
  const strip = (s: string): string => (s.includes('.') ? s.replace(/\.?0+$/, '') : s);
  if (exp < -4 || exp >= prec) {
    const e = Math.abs(exp);
    return `${strip(mant)}e${exp < 0 ? '-' : '+'}${e < 10 ? `0${e}` : e}`;
  }
  return strip(v.toFixed(Math.max(0, prec - 1 - exp)));
}

const DECIMAL_ABBRS = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB', 'ZB', 'YB'];

/** docker/go-units HumanSizeWithPrecision (HumanSize is precision 4). */
export function unitsHumanSize(size: number, precision = 4): string {
  let i = 0;
  while (size >= 1000 && i < DECIMAL_ABBRS.length - 1) {
    size /= 1000;
    i++;
  }
  return `${goFormatG(size, precision)}${DECIMAL_ABBRS[i] ?? ''}`;
}

/** crictl convertContainerState. */
function stateName(state: string): string {
  switch (state) {
    case 'CONTAINER_CREATED':
      return 'Created';
    case 'CONTAINER_RUNNING':
      return 'Running';
    case 'CONTAINER_EXITED':
      return 'Exited';
    default:
      return 'Unknown';
  }
}

const DIGEST = /^(sha256|sha384|sha512):[a-f0-9]{32,}$/;

const nsToMs = (ns: number): number => ns / 1e6;

/**
 * `crictl ps`: newest first; ids, pod ids and digest images truncated; CREATED as go-units'
 * HumanDuration + " ago"; POD and NAMESPACE from the kubelet's labels ("unknown" without).
 */
export function psTable(containers: Container[], now: number, opts: { quiet?: boolean } = {}): string {
  const sorted = [...containers].sort((a, b) => b.createdAt - a.createdAt);
  if (opts.quiet) return sorted.map((c) => `${c.id}\n`).join('');
  const rows = [['CONTAINER', 'IMAGE', 'CREATED', 'STATE', 'NAME', 'ATTEMPT', 'POD ID', 'POD', 'NAMESPACE']];
  for (const c of sorted) {
    let image = c.image?.image ?? '';
    const m = DIGEST.exec(image);
    if (m) image = truncatedID(image, `${m[1] ?? ''}:`);
    rows.push([
      truncatedID(c.id, ''),
      image,
      `${unitsHumanDuration(now - nsToMs(c.createdAt))} ago`,
      stateName(c.state),
      c.metadata?.name ?? '',
      String(c.metadata?.attempt ?? 0),
      truncatedID(c.podSandboxId, ''),
      c.labels?.[POD_NAME_LABEL] ?? 'unknown',
      c.labels?.[POD_NAMESPACE_LABEL] ?? 'unknown',
    ]);
  }
  return tabwrite(rows.map((r) => `${r.join('\t')}\n`).join(''), CRICTL_TABS);
}

/** crictl imageByRef: by first tag, else first digest, else id. */
function byRef(a: Image, b: Image): number {
  const cmp = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0);
  const ta = a.repoTags?.[0];
  const tb = b.repoTags?.[0];
  if (ta !== undefined && tb !== undefined) return cmp(ta, tb);
  const da = a.repoDigests?.[0];
  const db = b.repoDigests?.[0];
  if (da !== undefined && db !== undefined) return cmp(da, db);
  return cmp(a.id, b.id);
}

/** `crictl images`: IMAGE TAG IMAGE ID SIZE, a row per tag (`<none>` when untagged). */
export function imagesTable(images: Image[], opts: { quiet?: boolean } = {}): string {
  const sorted = [...images].sort(byRef);
  if (opts.quiet) return sorted.map((i) => `${i.id}\n`).join('');
  const rows = [['IMAGE', 'TAG', 'IMAGE ID', 'SIZE']];
  for (const img of sorted) {
    // normalizeRepoDigest: the name from the first repo digest.
    const first = img.repoDigests?.[0];
    let name = '<none>';
    if (first !== undefined) {
      const pair = first.split('@');
      name = pair.length === 2 ? (pair[0] ?? '') : 'errorName';
    }
    const size = unitsHumanSize(Number(img.size ?? 0), 3);
    const id = truncatedID(img.id, 'sha256:');
    const tags = img.repoTags ?? [];
    if (tags.length === 0) rows.push([name, '<none>', id, size]);
    for (const tag of tags) {
      const idx = tag.lastIndexOf(':');
      if (idx === -1) {
        rows.push(['errorRepoTag', 'errorRepoTag', id, size]);
        continue;
      }
      const repo = tag.slice(0, idx);
      rows.push([repo === '<none>' ? name : repo, tag.slice(idx + 1), id, size]);
    }
  }
  return tabwrite(rows.map((r) => `${r.join('\t')}\n`).join(''), CRICTL_TABS);
}

/**
 * `crictl stats`: CPU % from two samples (usageCoreNanoSeconds over the samples' timestamps),
 * MEM the working set, DISK and INODES the writable layer's; without `all`, containers with
 * neither CPU nor memory (not running) are left out; a container new in the second sample too.
 */
export function statsTable(
  before: ContainerStats[],
  after: ContainerStats[],
  opts: { all?: boolean } = {},
): string {
  const old = new Map(before.map((s) => [s.attributes?.id ?? '', s]));
  const rows = [['CONTAINER', 'NAME', 'CPU %', 'MEM', 'DISK', 'INODES']];
  const sorted = [...after].sort((a, b) => ((a.attributes?.id ?? '') < (b.attributes?.id ?? '') ? -1 : 1));
  for (const s of sorted) {
    const id = s.attributes?.id ?? '';
    const cpu = s.cpu?.usageCoreNanoSeconds?.value ?? 0;
    const mem = s.memory?.workingSetBytes?.value ?? 0;
    const disk = s.writableLayer?.usedBytes?.value ?? 0;
    const inodes = s.writableLayer?.inodesUsed?.value ?? 0;
    if (!opts.all && cpu === 0 && mem === 0) continue;
    const prev = old.get(id);
    if (!prev) continue;
    let cpuPerc = 0;
    if (cpu !== 0) {
      const duration = (s.cpu?.timestamp ?? 0) - (prev.cpu?.timestamp ?? 0);
      if (duration === 0) throw new Error('cpu stat is not updated during sample');
      cpuPerc = ((cpu - (prev.cpu?.usageCoreNanoSeconds?.value ?? 0)) / duration) * 100;
    }
    rows.push([
      truncatedID(id, ''),
      s.attributes?.metadata?.name ?? '',
      cpuPerc.toFixed(2),
      unitsHumanSize(mem),
      unitsHumanSize(disk),
      String(inodes),
    ]);
  }
  return tabwrite(rows.map((r) => `${r.join('\t')}\n`).join(''), CRICTL_TABS);
}

/** Go's time.Unix(0, ns).Format(time.RFC3339Nano) in UTC (fraction without trailing zeros). */
export function rfc3339Nano(ns: number): string {
  const ms = Math.floor(ns / 1e6);
  const base = new Date(ms).toISOString().slice(0, 19);
  const frac = String(Math.round(ns - ms * 1e6) + (ms % 1000) * 1e6)
    .padStart(9, '0')
    .replace(/0+$/, '');
  return `${base}${frac ? `.${frac}` : ''}Z`;
}

/** Go's time.Time{} as RFC 3339. */
const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

/**
 * `crictl inspect ID` (JSON, the default): `{"info": …, "status": …}` as Go's json.MarshalIndent
 * writes a map — keys sorted at every level, two-space indent, `<`, `>`, `&` escaped; the status's
 * times in RFC 3339 (startedAt the zero time for a created container, finishedAt unless exited);
 * each info value is the runtime's JSON, parsed.
 */
export function inspectJSON(status: ContainerStatus, info: Record<string, string>): string {
  const doc: Record<string, unknown> = {};
  const started = status.state !== 'CONTAINER_CREATED';
  const finished =
    status.state === 'CONTAINER_EXITED' || (status.state === 'CONTAINER_UNKNOWN' && status.finishedAt > 0);
  doc['status'] = {
    ...status,
    createdAt: rfc3339Nano(status.createdAt),
    startedAt: started ? rfc3339Nano(status.startedAt) : GO_ZERO_TIME,
    finishedAt: finished ? rfc3339Nano(status.finishedAt) : GO_ZERO_TIME,
  };
  for (const k of Object.keys(info).sort()) {
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(info[k] ?? 'null');
    } catch {
      // crictl ignores a value that is not JSON (json.Unmarshal's error is dropped): null.
      parsed = null;
    }
    doc[k] = parsed;
  }
  return `${JSON.stringify(sortKeys(doc), null, 2)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')}\n`;
}
