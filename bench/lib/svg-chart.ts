/**
 * Line charts as standalone SVG text, no dependency: linear axes with "nice" ticks (1, 2, 5 × 10^k),
 * several series on the same axes (colour and dash per series), a legend, and optional vertical
 * markers (e.g. "churn ends"). The output is deterministic for the same input, so committed charts
 * diff cleanly.
 */

export interface ChartSeries {
  label: string;
  color: string;
  /** SVG stroke-dasharray, e.g. "6 4"; solid when absent. */
  dash?: string;
  points: readonly { x: number; y: number }[];
  /** A dot at each point as well as the line (for a few measured points, e.g. N = 10, 90, 250). */
  showPoints?: boolean;
}

export interface ChartMarker {
  x: number;
  label: string;
}

export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly ChartSeries[];
  markers?: readonly ChartMarker[];
  /** Shaded from the x axis' start up to this x (e.g. the warm-up left out of the trend). */
  shadeUntil?: { x: number; label: string };
  width?: number;
  height?: number;
  /** Tick label text (default: up to 3 significant decimals). */
  formatY?: (v: number) => string;
  /** The y axis starts at 0 unless a value is negative (default true). */
  yFromZero?: boolean;
}

/**
 * About `count` round tick values covering [min, max]: a step of 1, 2 or 5 × 10^k, the first tick
 * at or below `min` and the last at or above `max`. A degenerate range is widened around its value.
 */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (max < min) [min, max] = [max, min];
  if (max === min) {
    const pad = min === 0 ? 1 : Math.abs(min) / 2;
    min -= pad;
    max += pad;
  }
  const raw = (max - min) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  const step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
  const lo = Math.floor(min / step + 1e-9) * step;
  const hi = Math.ceil(max / step - 1e-9) * step;
  const ticks: number[] = [];
  for (let v = lo; v <= hi + step / 2; v += step) ticks.push(roundTo(v, step));
  return ticks;
}

/** `v` rounded to the decimals `step` needs (so 0.1 + 0.2 prints as 0.3). */
function roundTo(v: number, step: number): number {
  const decimals = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  return Number(v.toFixed(Math.min(20, decimals)));
}

/** Maps [d0, d1] linearly onto [r0, r1] (r0 > r1 for an SVG y axis). A zero-width domain maps to the middle. */
export function linearScale(domain: readonly [number, number], range: readonly [number, number]) {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  if (d1 === d0) return () => (r0 + r1) / 2;
  return (v: number) => r0 + ((v - d0) / (d1 - d0)) * (r1 - r0);
}

/**
 * SVG path data through the points in x order: "M x y L x y …", one decimal. A non-finite y breaks
 * the line (the next finite point starts a new "M"), so a missing sample shows as a gap.
 */
export function pathData(
  points: readonly { x: number; y: number }[],
  sx: (v: number) => number,
  sy: (v: number) => number,
): string {
  const parts: string[] = [];
  let pen = false;
  for (const p of [...points].sort((a, b) => a.x - b.x)) {
    if (!Number.isFinite(p.x) || !Number.isFinite(p.y)) {
      pen = false;
      continue;
    }
    parts.push(`${pen ? 'L' : 'M'}${sx(p.x).toFixed(1)} ${sy(p.y).toFixed(1)}`);
    pen = true;
  }
  return parts.join(' ');
}

export function escapeXml(s: string): string {
  return s.replace(
    /[<>&"']/g,
    (c) => `&${{ '<': 'lt', '>': 'gt', '&': 'amp', '"': 'quot', "'": 'apos' }[c]};`,
  );
}

function defaultFormat(v: number): string {
  return String(Number(v.toPrecision(3)));
}

/**
 * Legend entries left to right (a 24 px line sample, the label at ~7 px per character, 20 px apart),
 * wrapping to a new row when the next entry would pass `maxWidth`.
 */
export function legendLayout(
  labels: readonly string[],
  maxWidth: number,
): { rows: number; at: { x: number; row: number }[] } {
  const at: { x: number; row: number }[] = [];
  let x = 0;
  let row = 0;
  for (const label of labels) {
    const w = 30 + 7 * label.length;
    if (x > 0 && x + w > maxWidth) {
      row++;
      x = 0;
    }
    at.push({ x, row });
    x += w + 20;
  }
  return { rows: labels.length ? row + 1 : 0, at };
}

/** The whole chart as an SVG document. */
export function lineChart(o: LineChartOptions): string {
  const width = o.width ?? 760;
  const height = o.height ?? 380;
  const fmt = o.formatY ?? defaultFormat;
  const legend = legendLayout(
    o.series.map((s) => s.label),
    width - 72 - 20,
  );
  // Title, then the legend's rows, then room for the markers' labels above the plot.
  const m = { top: 30 + legend.rows * 16 + 20, right: 20, bottom: 48, left: 72 };
  const finite = o.series.flatMap((s) =>
    s.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y)),
  );
  const xs = [...finite.map((p) => p.x), ...(o.markers ?? []).map((mk) => mk.x)];
  const ys = finite.map((p) => p.y);
  const xMin = xs.length ? Math.min(...xs) : 0;
  const xMax = xs.length ? Math.max(...xs) : 1;
  let yMin = ys.length ? Math.min(...ys) : 0;
  const yMax = ys.length ? Math.max(...ys) : 1;
  if ((o.yFromZero ?? true) && yMin > 0) yMin = 0;
  const xt = niceTicks(xMin, xMax, 8);
  const yt = niceTicks(yMin, yMax, 5);
  const x0 = xt[0] ?? 0;
  const x1 = xt[xt.length - 1] ?? 1;
  const y0 = yt[0] ?? 0;
  const y1 = yt[yt.length - 1] ?? 1;
  const sx = linearScale([x0, x1], [m.left, width - m.right]);
  const sy = linearScale([y0, y1], [height - m.bottom, m.top]);
  const plotTop = m.top;
  const plotBottom = height - m.bottom;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(o.title)}</text>`,
  ];
  if (o.shadeUntil && o.shadeUntil.x > x0) {
    const right = sx(Math.min(o.shadeUntil.x, x1));
    out.push(
      `<rect x="${m.left}" y="${plotTop}" width="${(right - m.left).toFixed(1)}" height="${plotBottom - plotTop}" fill="#eeeeee"/>`,
      `<text x="${m.left + 4}" y="${plotTop + 14}" fill="#777777">${escapeXml(o.shadeUntil.label)}</text>`,
    );
  }
  for (const v of yt) {
    const y = sy(v).toFixed(1);
    out.push(
      `<line x1="${m.left}" y1="${y}" x2="${width - m.right}" y2="${y}" stroke="#dddddd"/>`,
      `<text x="${m.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${escapeXml(fmt(v))}</text>`,
    );
  }
  for (const v of xt) {
    const x = sx(v).toFixed(1);
    out.push(
      `<line x1="${x}" y1="${plotBottom}" x2="${x}" y2="${plotBottom + 5}" stroke="#333333"/>`,
      `<text x="${x}" y="${plotBottom + 18}" text-anchor="middle">${escapeXml(defaultFormat(v))}</text>`,
    );
  }
  out.push(
    `<line x1="${m.left}" y1="${plotBottom}" x2="${width - m.right}" y2="${plotBottom}" stroke="#333333"/>`,
    `<line x1="${m.left}" y1="${plotTop}" x2="${m.left}" y2="${plotBottom}" stroke="#333333"/>`,
    `<text x="${(m.left + width - m.right) / 2}" y="${height - 10}" text-anchor="middle">${escapeXml(o.xLabel)}</text>`,
    `<text transform="translate(16 ${(plotTop + plotBottom) / 2}) rotate(-90)" text-anchor="middle">${escapeXml(o.yLabel)}</text>`,
  );
  for (const mk of o.markers ?? []) {
    const x = sx(mk.x).toFixed(1);
    out.push(
      `<line x1="${x}" y1="${plotTop}" x2="${x}" y2="${plotBottom}" stroke="#999999" stroke-dasharray="2 3"/>`,
      `<text x="${x}" y="${plotTop - 4}" text-anchor="middle" fill="#555555">${escapeXml(mk.label)}</text>`,
    );
  }
  for (const s of o.series) {
    const d = pathData(s.points, sx, sy);
    if (!d) continue;
    const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : '';
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.8"${dash}/>`);
    if (!s.showPoints) continue;
    for (const p of s.points) {
      if (!Number.isFinite(p.x) || !Number.isFinite(p.y)) continue;
      out.push(`<circle cx="${sx(p.x).toFixed(1)}" cy="${sy(p.y).toFixed(1)}" r="3" fill="${s.color}"/>`);
    }
  }
  // Legend: rows under the title, outside the plot, so it never hides a line.
  o.series.forEach((s, i) => {
    const at = legend.at[i] ?? { x: 0, row: 0 };
    const x = m.left + at.x;
    const y = 30 + at.row * 16 + 6;
    const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : '';
    out.push(
      `<line x1="${x}" y1="${y}" x2="${x + 24}" y2="${y}" stroke="${s.color}" stroke-width="2"${dash}/>`,
      `<text x="${x + 30}" y="${y}" dominant-baseline="middle">${escapeXml(s.label)}</text>`,
    );
  });
  out.push('</svg>', '');
  return out.join('\n');
}
