/**
 * Decoding of large manifests off the event loop. Parsing YAML costs ~0.3 s per MiB and defaulting
 * plus validating a big pod ~35 ms per MiB, all synchronous: a 10 MiB manifest (the size limit,
 * upstream's maxConfigLength) decoded inline would stop the sync loop, probes and the kubelet API
 * for seconds. So a text above {@link INLINE_DECODE_BYTES} is decoded in a worker thread, started
 * on first use and ended after a minute without work; smaller ones (every ordinary manifest) are
 * decoded inline, as before. The result (pods or the `KubeletError` refusal) is the same either way.
 * A thread that fails (cannot start, dies, or is ended with work left) is logged once, at warn
 * level with its cause, and what it had is decoded inline.
 */
import { Worker } from 'node:worker_threads';
import type { KubeletPod } from '../api/types.ts';
import { KubeletError, describeError, type ErrorCode } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { parseManifest } from './decode.ts';
import { decodeHttpBody } from './http-source.ts';
import { defaultStaticPod } from './static-pod.ts';

/** Texts up to this size are decoded inline (at most ~80 ms of YAML parsing). */
export const INLINE_DECODE_BYTES = 256 * 1024;
/** A decode that takes longer is abandoned (the worker is ended) and the manifest refused. */
export const DECODE_TIMEOUT_MS = 60_000;
const IDLE_MS = 60_000;

export interface DecodeRequest {
  id: number;
  /** A static pod file (one Pod) or an HTTP source body (a Pod or a PodList). */
  kind: 'file' | 'http';
  text: string;
  /** File path or URL. */
  origin: string;
  nodeName: string;
}

export type DecodeReply =
  | { id: number; ok: true; pods: KubeletPod[] }
  | { id: number; ok: false; code: ErrorCode; op: string; message: string };

function decodeInline(req: Omit<DecodeRequest, 'id'>): KubeletPod[] {
  if (req.kind === 'http') return decodeHttpBody(req.text, req.origin, req.nodeName);
  const raw = parseManifest(req.text, req.origin);
  return [defaultStaticPod(raw, { nodeName: req.nodeName, source: 'file', origin: req.origin })];
}

interface Pending {
  req: Omit<DecodeRequest, 'id'>;
  /** The thread the request went to. */
  worker: Worker;
  resolve(pods: KubeletPod[]): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

/** What {@link decodePods} needs besides the request. */
export interface DecodeDeps {
  /** Where a failed decoder thread is reported (once per thread, at warn level). */
  logger: Logger;
  /**
   * The decoder thread's module, when a call has to start one; tests pass one that fails. Default:
   * decode-worker beside this file.
   */
  workerURL?: URL;
}

let worker: Worker | undefined;
let idle: NodeJS.Timeout | undefined;
let nextId = 1;
const pending = new Map<number, Pending>();
/** Why a thread was ended on purpose (idle, a stuck decode): its exit is then no failure by itself. */
const endedBecause = new WeakMap<Worker, string>();
/**
 * The cause of the last failure warned about, until a thread answers again: a thread that cannot
 * start fails again for every large manifest (a file source re-reads them every period), and
 * that is said once, not every period.
 */
let warnedCause: string | undefined;

function defaultWorkerURL(): URL {
  // Tests run the .ts sources; the shipped build runs dist/*.js.
  const ext = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  return new URL(`./decode-worker.${ext}`, import.meta.url);
}

/** The requests `w` has not answered yet. */
function pendingOn(w: Worker): [number, Pending][] {
  return [...pending].filter(([, p]) => p.worker === w);
}

/**
 * Thread `w` failed (it could not start, or it died): what it had is decoded inline instead — a
 * stall of the event loop is better than refusing a manifest that is fine. The next large
 * manifest tries a new thread (whose requests stay with it).
 */
function decodeLeftoversInline(w: Worker): void {
  for (const [id, p] of pendingOn(w)) {
    clearTimeout(p.timer);
    pending.delete(id);
    try {
      p.resolve(decodeInline(p.req));
    } catch (err) {
      p.reject(err);
    }
  }
}

function endWorker(reason: string): void {
  const w = worker;
  worker = undefined;
  clearTimeout(idle);
  idle = undefined;
  if (w) {
    endedBecause.set(w, reason);
    void w.terminate();
  }
}

function ensureWorker(deps: DecodeDeps): Worker {
  if (worker) return worker;
  // The kubelet's own node flags are not the decoder's business (some, like --input-type, even
  // stop a worker from starting).
  const w = new Worker(deps.workerURL ?? defaultWorkerURL(), { execArgv: [] });
  w.on('message', (reply: DecodeReply) => {
    const p = pending.get(reply.id);
    if (!p) return;
    pending.delete(reply.id);
    clearTimeout(p.timer);
    warnedCause = undefined;
    if (reply.ok) p.resolve(reply.pods);
    else p.reject(new KubeletError(reply.code, reply.op, reply.message.slice(reply.op.length + 2)));
    if (pending.size === 0) {
      clearTimeout(idle);
      idle = setTimeout(() => endWorker('idle'), IDLE_MS).unref();
    }
  });
  // A crash fires 'error' and then 'exit': one line per thread, with the first cause seen.
  let reported = false;
  const fallBack = (cause: string): void => {
    if (worker === w) worker = undefined;
    const ended = endedBecause.get(w);
    const left = pendingOn(w).length;
    // Ended on purpose with nothing left to do (idle): no fallback, nothing to say.
    if (!reported && (ended === undefined || left > 0)) {
      reported = true;
      const err = ended ?? cause;
      const fields = { err, manifests: left };
      const msg =
        'manifest decoder thread failed; decoding its manifests inline (the event loop waits for them)';
      if (err === warnedCause) deps.logger.debug(msg, fields);
      else deps.logger.warn(msg, fields);
      warnedCause = err;
    }
    decodeLeftoversInline(w);
  };
  w.on('error', (err) => fallBack(describeError(err)));
  w.on('exit', (code) => fallBack(`the thread exited with code ${code}`));
  // Never keeps the process alive on its own (after the listeners: adding one refs it again).
  w.unref();
  worker = w;
  return w;
}

/**
 * Decodes a static pod file or an HTTP source body into pods: inline when small, else in the
 * decoder thread. Rejects with the decoder's `KubeletError('InvalidArgument')` naming the field,
 * or `DeadlineExceeded` after {@link DECODE_TIMEOUT_MS}.
 */
export function decodePods(req: Omit<DecodeRequest, 'id'>, deps: DecodeDeps): Promise<KubeletPod[]> {
  if (req.text.length <= INLINE_DECODE_BYTES) {
    try {
      return Promise.resolve(decodeInline(req));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }
  return new Promise<KubeletPod[]>((resolve, reject) => {
    const id = nextId++;
    const w = ensureWorker(deps);
    clearTimeout(idle);
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(
        new KubeletError(
          'DeadlineExceeded',
          `decode ${req.origin}`,
          `decoding ${req.text.length} characters took longer than ${DECODE_TIMEOUT_MS / 1000} s`,
        ),
      );
      // The thread is stuck in that decode: end it; the next large manifest starts a new one.
      if (worker === w) endWorker(`a decode took longer than ${DECODE_TIMEOUT_MS / 1000} s; ended`);
    }, DECODE_TIMEOUT_MS);
    pending.set(id, { req, worker: w, resolve, reject, timer });
    w.postMessage({ id, ...req } satisfies DecodeRequest);
  });
}
