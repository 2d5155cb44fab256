/**
 * Is a series flat? A least-squares line through (time, value) samples gives the trend; the trend
 * per 10 minutes is compared with a tolerance stated per series: the larger of an absolute amount
 * and a fraction of the series' mean over the fitted samples (a leak of 1 MiB per 10 min matters
 * little on a 100 MiB process; one container per 10 min matters on an idle node).
 */

export interface Point {
  /** Seconds (any origin). */
  t: number;
  v: number;
}

export interface LinearFit {
  /** Units per second. */
  slope: number;
  /** Value at t = 0. */
  intercept: number;
  n: number;
}

/**
 * Ordinary least squares over the finite points. Slope and intercept are NaN with fewer than two
 * points or when every point has the same t (the slope is then undefined, not zero).
 */
export function linearFit(points: readonly Point[]): LinearFit {
  const ps = points.filter((p) => Number.isFinite(p.t) && Number.isFinite(p.v));
  const n = ps.length;
  if (n < 2) return { slope: NaN, intercept: NaN, n };
  // Centre on the means first: t is an epoch-sized number in some callers and t² would lose digits.
  const mt = ps.reduce((a, p) => a + p.t, 0) / n;
  const mv = ps.reduce((a, p) => a + p.v, 0) / n;
  let stt = 0;
  let stv = 0;
  for (const p of ps) {
    stt += (p.t - mt) ** 2;
    stv += (p.t - mt) * (p.v - mv);
  }
  if (stt === 0) return { slope: NaN, intercept: NaN, n };
  const slope = stv / stt;
  return { slope, intercept: mv - slope * mt, n };
}

export const TEN_MINUTES_S = 600;

export interface Tolerance {
  /** Allowed |trend| per 10 minutes, in the series' unit… */
  absolute: number;
  /** …or this fraction of the fitted samples' mean per 10 minutes, whichever is larger. */
  relative: number;
}

/** The allowed |trend| per 10 minutes for a series whose fitted samples average `mean`. */
export function allowedPer10Min(tol: Tolerance, mean: number): number {
  return Math.max(tol.absolute, tol.relative * Math.abs(Number.isFinite(mean) ? mean : 0));
}

export type Verdict = 'flat' | 'grows' | 'shrinks' | 'n/a';

export function verdict(slopePer10Min: number, allowed: number): Verdict {
  if (!Number.isFinite(slopePer10Min)) return 'n/a';
  if (Math.abs(slopePer10Min) <= allowed) return 'flat';
  return slopePer10Min > 0 ? 'grows' : 'shrinks';
}

export interface SeriesSummary {
  /** First sample of the fitted window. */
  start: number;
  /** The sample nearest the middle of the fitted window (in time). */
  middle: number;
  /** Last sample of the fitted window. */
  end: number;
  max: number;
  mean: number;
  /** Least-squares trend over the fitted window, per 10 minutes. */
  slopePer10Min: number;
  allowedPer10Min: number;
  verdict: Verdict;
  n: number;
}

/** Start / middle / end / max / mean and the trend's verdict over `points` (the fitted window). */
export function summarizeSeries(points: readonly Point[], tol: Tolerance): SeriesSummary {
  const ps = points.filter((p) => Number.isFinite(p.t) && Number.isFinite(p.v)).sort((a, b) => a.t - b.t);
  const first = ps[0];
  const last = ps[ps.length - 1];
  if (!first || !last) {
    return {
      start: NaN,
      middle: NaN,
      end: NaN,
      max: NaN,
      mean: NaN,
      slopePer10Min: NaN,
      allowedPer10Min: NaN,
      verdict: 'n/a',
      n: 0,
    };
  }
  const mid = (first.t + last.t) / 2;
  let middle = first;
  for (const p of ps) if (Math.abs(p.t - mid) < Math.abs(middle.t - mid)) middle = p;
  const mean = ps.reduce((a, p) => a + p.v, 0) / ps.length;
  const slopePer10Min = linearFit(ps).slope * TEN_MINUTES_S;
  const allowed = allowedPer10Min(tol, mean);
  return {
    start: first.v,
    middle: middle.v,
    end: last.v,
    max: Math.max(...ps.map((p) => p.v)),
    mean,
    slopePer10Min,
    allowedPer10Min: allowed,
    verdict: verdict(slopePer10Min, allowed),
    n: ps.length,
  };
}
