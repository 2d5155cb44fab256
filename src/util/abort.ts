import { KubeletError } from './errors.ts';

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortReason(signal: AbortSignal | undefined): Error {
  const r: unknown = signal?.reason;
  if (r instanceof Error) return r;
  return new KubeletError('Canceled', 'wait', typeof r === 'string' ? r : 'aborted');
}

/** A signal that aborts when any of the given ones does, or after `timeoutMs` if given. */
export function combineSignals(signals: (AbortSignal | undefined)[], timeoutMs?: number): AbortSignal {
  const list = signals.filter((s): s is AbortSignal => s !== undefined);
  if (timeoutMs !== undefined) list.push(AbortSignal.timeout(timeoutMs));
  return AbortSignal.any(list);
}

/**
 * Settles with `p`, or rejects with the signal's reason (or the error `reason` makes of it) as soon
 * as it aborts: a callee that ignores its signal cannot hold the caller past a cancellation.
 */
export function untilAborted<T>(
  p: Promise<T>,
  signal: AbortSignal | undefined,
  reason: (signal: AbortSignal) => Error = abortReason,
): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(reason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(reason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
