/**
 * The HTTP source (upstream pkg/kubelet/config/http.go): GETs one URL every `checkFrequencyMs`
 * (the period counts from the end of the previous attempt) with the configured headers. The body is
 * one Pod or a PodList, JSON or YAML. Upstream facts kept:
 * - a non-200 answer, a network error, a timeout (default 10 s) or a body that does not decode keeps
 *   the previous snapshot (nothing is sent);
 * - a PodList is all-or-nothing: one invalid item rejects the whole body;
 * - an empty 200 body sends an empty snapshot (the source counts as seen) and is logged as a failure;
 * - a body identical to the last one used is not decoded or sent again;
 * - failures are logged loudly the first three times in a row, then at debug level; a recovery is
 *   logged at info with the number of failures it ends.
 */
import type { KubeletPod } from '../api/types.ts';
import { HTTP_SOURCE_TIMEOUT_MS, MAX_MANIFEST_BYTES } from '../config/defaults.ts';
import { sleep } from '../util/abort.ts';
import { describeError, isCanceled, KubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { parseManifest } from './decode.ts';
import { isObject, stripNulls } from '../util/json.ts';
import { decodePods } from './offload.ts';
import { defaultStaticPod } from './static-pod.ts';
import type { PodSource, SourceProblem } from './types.ts';

export interface HttpSourceOptions {
  url: string;
  /** Extra request headers; each value list is sent as repeated headers (upstream http.Header). */
  headers: Record<string, string[]>;
  nodeName: string;
  checkFrequencyMs: number;
  logger: Logger;
  onProblem?: (p: SourceProblem) => void;
  fetchTimeoutMs?: number;
}

/** How many failures in a row are logged at warn before dropping to debug (upstream: 3). */
const LOUD_FAILURES = 3;

class FetchProblem extends KubeletError {
  readonly reason: SourceProblem['reason'];
  /** A snapshot to send despite the failure (the empty one for an empty body). */
  snapshot?: KubeletPod[];
  constructor(reason: SourceProblem['reason'], op: string, message: string, cause?: unknown) {
    super(reason === 'FetchFailed' ? 'Unavailable' : 'InvalidArgument', op, message, { cause });
    this.reason = reason;
  }
}

async function readLimited(res: Response, limit: number, op: string): Promise<string> {
  if (!res.body) return '';
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel();
      throw new FetchProblem('FetchFailed', op, `response body is larger than ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Decodes a body into pods: a single Pod, or a PodList whose items must all be valid. */
export function decodeHttpBody(text: string, url: string, nodeName: string): KubeletPod[] {
  const op = `decode pods from ${url}`;
  const raw = parseManifest(text, url);
  const opts = { nodeName, source: 'http' as const, origin: url };
  if (isObject(raw) && raw.kind === 'PodList') {
    const items = stripNulls(raw.items ?? []);
    if (!Array.isArray(items)) throw new KubeletError('InvalidArgument', op, 'items: must be a list');
    const list: unknown[] = items;
    return list.map((item, i) => {
      // List items usually leave out apiVersion/kind; they are Pods of the list's version.
      const pod = isObject(item) ? { apiVersion: 'v1', kind: 'Pod', ...item } : item;
      try {
        return defaultStaticPod(pod, opts);
      } catch (err) {
        throw new KubeletError('InvalidArgument', op, `items[${i}]: ${describeError(err)}`, { cause: err });
      }
    });
  }
  if (isObject(raw) && raw.kind === 'Pod') return [defaultStaticPod(raw, opts)];
  const kind = isObject(raw) ? JSON.stringify(raw.kind ?? '') : 'a non-object';
  throw new KubeletError(
    'InvalidArgument',
    op,
    `could not decode as a single Pod or a PodList (kind ${kind})`,
  );
}

export function createHttpSource(opts: HttpSourceOptions): PodSource {
  const log = opts.logger.child({ source: 'http', url: opts.url });
  const timeoutMs = opts.fetchTimeoutMs ?? HTTP_SOURCE_TIMEOUT_MS;
  const stopper = new AbortController();
  const op = `GET ${opts.url}`;
  let loop: Promise<void> | undefined;
  let lastBody: string | undefined;
  let failures = 0;
  let lastFailure: string | undefined;

  const headers = new Headers();
  for (const [name, values] of Object.entries(opts.headers)) for (const v of values) headers.append(name, v);

  /** One attempt: the pods of a new valid body, undefined for an unchanged one; rejects on any failure. */
  async function fetchOnce(): Promise<KubeletPod[] | undefined> {
    let res: Response;
    try {
      res = await fetch(opts.url, {
        headers,
        signal: AbortSignal.any([stopper.signal, AbortSignal.timeout(timeoutMs)]),
      });
    } catch (err) {
      if (stopper.signal.aborted) throw err;
      // fetch() says only "fetch failed"; the reason (ECONNREFUSED, timeout...) is in its cause.
      const cause = err instanceof Error && err.cause !== undefined ? `: ${describeError(err.cause)}` : '';
      throw new FetchProblem('FetchFailed', op, `${describeError(err)}${cause}`, err);
    }
    let text: string;
    try {
      text = await readLimited(res, MAX_MANIFEST_BYTES, op);
    } catch (err) {
      if (err instanceof FetchProblem || stopper.signal.aborted) throw err;
      throw new FetchProblem('FetchFailed', op, `reading body: ${describeError(err)}`, err);
    }
    if (res.status !== 200)
      throw new FetchProblem('FetchFailed', op, `${res.status} ${res.statusText}`.trim());
    if (text.length === 0) {
      lastBody = undefined;
      const empty = new FetchProblem('FetchFailed', op, 'zero-length data received');
      empty.snapshot = [];
      throw empty;
    }
    if (text === lastBody) return undefined;
    let pods: KubeletPod[];
    try {
      // A large body is decoded off the event loop (offload.ts).
      pods = await decodePods(
        { kind: 'http', text, origin: opts.url, nodeName: opts.nodeName },
        { logger: log },
      );
    } catch (err) {
      throw new FetchProblem('InvalidManifest', op, describeError(err), err);
    }
    lastBody = text;
    return pods;
  }

  function onFailure(err: unknown): void {
    const reason = err instanceof FetchProblem ? err.reason : 'FetchFailed';
    const message = describeError(err);
    failures++;
    const changed = message !== lastFailure;
    lastFailure = message;
    const fields = { error: message, reason, failures };
    if (failures <= LOUD_FAILURES || changed) {
      log.warn(
        failures === LOUD_FAILURES
          ? 'Failed to read pods from URL; repeats of this failure are logged at debug level'
          : 'Failed to read pods from URL',
        fields,
      );
    } else {
      log.debug('Failed to read pods from URL', fields);
    }
    if (changed) opts.onProblem?.({ source: 'http', origin: opts.url, reason, message });
  }

  function onSuccess(): void {
    if (failures > 0) log.info('Successfully read pods from URL', { failuresBefore: failures });
    failures = 0;
    lastFailure = undefined;
  }

  async function run(send: (pods: KubeletPod[]) => void): Promise<void> {
    while (!stopper.signal.aborted) {
      try {
        const pods = await fetchOnce();
        onSuccess();
        if (pods) send(pods);
      } catch (err) {
        if (stopper.signal.aborted) return;
        onFailure(err);
        if (err instanceof FetchProblem && err.snapshot) send(err.snapshot);
      }
      try {
        await sleep(opts.checkFrequencyMs, stopper.signal);
      } catch (err) {
        if (isCanceled(err) || stopper.signal.aborted) return;
        throw err;
      }
    }
  }

  return {
    name: 'http',
    start(send) {
      if (loop) throw new KubeletError('FailedPrecondition', 'start http source', 'already started');
      log.info('Watching URL', { checkFrequencyMs: opts.checkFrequencyMs });
      // Nothing may reach `send` once stop() was called, even from an attempt already in flight.
      const guarded = (pods: KubeletPod[]) => {
        if (!stopper.signal.aborted) send(pods);
      };
      loop = run(guarded).catch((err: unknown) => {
        log.error('HTTP source loop ended unexpectedly', { error: describeError(err) });
      });
    },
    async stop() {
      stopper.abort(new KubeletError('Canceled', 'http source', 'stopped'));
      await loop;
    },
  };
}
