/**
 * What one probe attempt concluded (upstream probe.Result without Unknown: a probe that could not
 * conclude throws instead, and the prober discards it as upstream does with an errored probe).
 * `warning` counts as success; its output is reported in a ProbeWarning event.
 */
export interface ProbeOutcome {
  result: 'success' | 'warning' | 'failure';
  /** The handler's output: command output, response body, or why it failed. */
  output: string;
}

export function success(output = ''): ProbeOutcome {
  return { result: 'success', output };
}

export function failure(output: string): ProbeOutcome {
  return { result: 'failure', output };
}

/** Decodes at most `limit` bytes of output as UTF-8 (upstream keeps only the first 10 KiB). */
export function limitedText(chunks: Buffer[], limit: number): string {
  let left = limit;
  const kept: Buffer[] = [];
  for (const c of chunks) {
    if (left <= 0) break;
    const part = c.length > left ? c.subarray(0, left) : c;
    kept.push(part);
    left -= part.length;
  }
  return Buffer.concat(kept).toString('utf8');
}
