/**
 * Preloaded into tskubelet by the benchmark (NODE_OPTIONS=--import=<this file, compiled into dist/ by
 * scripts/build.sh so the kubelet stays free of type stripping>) to measure its
 * event-loop delay without touching src/: a perf_hooks histogram (10 ms resolution timer) runs in the
 * kubelet's main thread; on SIGUSR2 it appends one JSON line with the delay percentiles (ms, beyond the timer's own 10 ms) since
 * the previous SIGUSR2 and process.memoryUsage() (MiB) to $TSKUBELET_BENCH_ELD_FILE and starts over. Does nothing without that variable.
 */
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const file = process.env.TSKUBELET_BENCH_ELD_FILE;
if (file) {
  const RESOLUTION_MS = 10;
  const h = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  h.enable();
  let since = Date.now();
  process.on('SIGUSR2', () => {
    // The histogram records the time between timer ticks: the delay is what exceeds the resolution.
    const ms = (ns: number) => Math.max(0, Math.round(ns / 1e4) / 100 - RESOLUTION_MS);
    const line = {
      since,
      until: Date.now(),
      count: h.count,
      p50: ms(h.percentile(50)),
      p90: ms(h.percentile(90)),
      p99: ms(h.percentile(99)),
      max: ms(h.max),
      mean: ms(h.mean),
      // Where the resident memory is, at the end of the period (MiB).
      ...Object.fromEntries(
        Object.entries(process.memoryUsage()).map(([k, v]) => [k, Math.round(v / 2 ** 20)]),
      ),
    };
    appendFileSync(file, `${JSON.stringify(line)}\n`);
    h.reset();
    since = Date.now();
  });
}
