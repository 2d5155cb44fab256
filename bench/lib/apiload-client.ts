/**
 * The load generator of the "apiload" scenario (bench/lib/apiload.ts), run as a worker thread so
 * that its sockets and TLS handshakes never delay the main thread, which times the pod batch. It
 * talks straight to the kubelet's HTTPS port with the API server's kubelet client certificate, as
 * kube-apiserver does when it proxies `kubectl logs -f` and `kubectl exec` (a new connection per
 * request, full TLS handshake, the kubelet's serving certificate not verified):
 *
 * - followers: `GET /containerLogs/<ns>/<pod>/<container>?follow=true`, each on its own connection,
 *   open from the start to the stop. One that is refused, fails, ends early or receives nothing in
 *   its last `stallMs` (the pods print a line every 100 ms) counts as an error.
 * - exec, open loop at `execPerSec` (a slow kubelet accumulates execs in flight; they are not
 *   spaced out): `POST /exec/<ns>/<pod>/<container>?command=echo&command=hi&output=1` upgraded to
 *   SPDY/3.1 with the remotecommand v4 protocol, which is what kubectl 1.32 speaks to a 1.20 API
 *   server and the API server to the kubelet: the client opens the error and stdout streams, then
 *   must read `hi\n` on stdout and a Success status on the error stream before the runtime's
 *   GOAWAY. Anything else (a status other than 101, a reset, a timeout, other output) is an error.
 *
 * Bounded: `followers` streams, at most `maxInFlight` execs in flight (one more is an error, not a
 * queue), each exec timed out after `execTimeoutMs`, the whole run stops by itself after `maxMs`.
 * On stop every socket is destroyed and the worker waits for each one's `close` before it reports
 * (`socketsLeft` says how many did not close within 5 s).
 *
 * The SPDY client is the minimum the exchange needs: frames are parsed by their length, the
 * server's compressed header blocks are skipped (the exchange needs nothing from them), and ours are
 * zlib at level 0 (stored blocks, sync-flushed; no reference to the SPDY dictionary), which any
 * zlib reader accepts.
 */
import { readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { connect as tlsConnect } from 'node:tls';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';

export interface LoadSpec {
  host: string;
  port: number;
  certFile: string;
  keyFile: string;
  namespace: string;
  /** Pods to spread the followers and execs over (round robin). */
  pods: readonly string[];
  container: string;
  followers: number;
  execPerSec: number;
  execTimeoutMs: number;
  maxInFlight: number;
  /** A follower silent for this long at the stop counts as stalled. */
  stallMs: number;
  /** Hard cap on the run, in case the main thread never says stop. */
  maxMs: number;
}

export interface LoadResult {
  durationMs: number;
  followers: {
    /** Followers that got a 200. */
    ok: number;
    /** First error per follower, counted by kind. */
    errors: Record<string, number>;
    lines: number;
    /** Per follower: request → first log bytes. */
    firstByteMs: number[];
  };
  exec: {
    started: number;
    ok: number;
    errors: Record<string, number>;
    /** Per successful exec: request → the runtime's GOAWAY (output and status read). */
    latencyMs: number[];
    /** Per exec that was upgraded: request → 101. */
    upgradeMs: number[];
    maxInFlight: number;
  };
  socketsLeft: number;
}

export type FromWorker =
  { type: 'followers-open'; ok: number; failed: number } | { type: 'result'; result: LoadResult };
export type ToWorker = { type: 'stop' };

// ---------------------------------------------------------------- SPDY/3.1, the part exec needs

const SPDY_VERSION = 3;
const SYN_STREAM = 1;
const RST_STREAM = 3;
const PING = 6;
const GOAWAY = 7;
/** zlib header: deflate, 32 KiB window, no preset dictionary, (0x78 << 8 | 0x01) % 31 === 0. */
const ZLIB_HEADER = Buffer.from([0x78, 0x01]);

/** An uncompressed SPDY/3 name/value block: u32 count, then u32-length-prefixed names and values. */
function nameValueBlock(headers: Record<string, string>): Buffer {
  const parts: Buffer[] = [];
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n);
    return b;
  };
  const entries = Object.entries(headers);
  parts.push(u32(entries.length));
  for (const [k, v] of entries) {
    const name = Buffer.from(k.toLowerCase());
    const value = Buffer.from(v);
    parts.push(u32(name.length), name, u32(value.length), value);
  }
  return Buffer.concat(parts);
}

/**
 * The block as zlib level 0 with a sync flush: a non-final stored block, then the empty stored block
 * that marks a flush (which is what makes a reader hand the data over before the next frame). The
 * header blocks of one connection continue one zlib stream: only the first carries the zlib header.
 */
function storedBlock(data: Buffer, first: boolean): Buffer {
  const stored = (d: Buffer): Buffer => {
    const h = Buffer.alloc(5);
    h[0] = 0x00; // BFINAL 0, BTYPE 00, padded to the byte
    h.writeUInt16LE(d.length, 1);
    h.writeUInt16LE(~d.length & 0xffff, 3);
    return Buffer.concat([h, d]);
  };
  return Buffer.concat([...(first ? [ZLIB_HEADER] : []), stored(data), stored(Buffer.alloc(0))]);
}

function controlFrame(type: number, flags: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(8);
  h.writeUInt16BE(0x8000 | SPDY_VERSION, 0);
  h.writeUInt16BE(type, 2);
  h.writeUInt8(flags, 4);
  h.writeUIntBE(payload.length, 5, 3);
  return Buffer.concat([h, payload]);
}

function synStream(streamId: number, headerBlock: Buffer): Buffer {
  const p = Buffer.alloc(10);
  p.writeUInt32BE(streamId & 0x7fffffff, 0);
  p.writeUInt32BE(0, 4); // associated stream
  p.writeUInt8(0, 8); // priority 0 (3 high bits), unused
  p.writeUInt8(0, 9); // slot
  return controlFrame(SYN_STREAM, 0, Buffer.concat([p, headerBlock]));
}

type ExecOutcome = { ok: true; upgradeMs: number; totalMs: number } | { ok: false; error: string };

const ERROR_STREAM = 1;
const STDOUT_STREAM = 3;

interface Tls {
  cert: Buffer;
  key: Buffer;
}

export interface ExecTarget {
  /** Opens the connection (TLS to a kubelet; plain TCP to a runtime's streaming server in a test). */
  connect: () => Socket;
  /** The event after which the request can be written. */
  readyEvent: 'connect' | 'secureConnect';
  hostHeader: string;
  path: string;
  timeoutMs: number;
  /** What `echo` was asked to print (the command's stdout must be this and a newline). */
  expect: string;
}

/** One `echo` exec over SPDY/3.1, remotecommand v4 (stdout only); never rejects. */
export function execOnce(t: ExecTarget, track: (s: Socket) => void): Promise<ExecOutcome> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const expect = t.expect;
    const sock = t.connect();
    track(sock);
    let buf: Buffer = Buffer.alloc(0);
    let upgradeMs: number | undefined;
    const stdout: Buffer[] = [];
    const status: Buffer[] = [];
    let done = false;
    const finish = (o: ExecOutcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(o);
      // Close as a client does (TLS close_notify, FIN); destroy if the peer does not answer.
      sock.end();
      const kill = setTimeout(() => sock.destroy(), 2_000);
      sock.once('close', () => clearTimeout(kill));
    };
    const timer = setTimeout(() => {
      finish({ ok: false, error: upgradeMs === undefined ? 'timeout before 101' : 'timeout after 101' });
      sock.destroy();
    }, t.timeoutMs);
    const verdict = (): ExecOutcome => {
      const out = Buffer.concat(stdout).toString('utf8');
      const st = Buffer.concat(status).toString('utf8');
      let parsed: { status?: string } = {};
      try {
        parsed = JSON.parse(st) as { status?: string };
      } catch {
        return { ok: false, error: st === '' ? 'no status' : 'unparsable status' };
      }
      if (parsed.status !== 'Success') return { ok: false, error: `status ${parsed.status ?? '?'}` };
      if (out !== `${expect}\n`) return { ok: false, error: 'wrong output' };
      return { ok: true, upgradeMs: upgradeMs ?? NaN, totalMs: performance.now() - t0 };
    };
    const frames = (): void => {
      while (buf.length >= 8 && !done) {
        const len = buf.readUIntBE(5, 3);
        if (buf.length < 8 + len) return;
        const frame = buf.subarray(0, 8 + len);
        buf = buf.subarray(8 + len);
        const payload = frame.subarray(8);
        if ((frame[0] ?? 0) & 0x80) {
          const type = frame.readUInt16BE(2);
          if (type === PING)
            sock.write(frame); // answered with the same id
          else if (type === RST_STREAM) {
            // The runtime resets the error stream (CANCEL) once it has written the status to it.
            const id = payload.length >= 8 ? payload.readUInt32BE(0) & 0x7fffffff : 0;
            if (!(id === ERROR_STREAM && status.length > 0)) {
              finish({
                ok: false,
                error: `stream ${id} reset (${payload.length >= 8 ? payload.readUInt32BE(4) : '?'})`,
              });
            }
          } else if (type === GOAWAY) finish(verdict());
          // SYN_REPLY, SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do for one short exec.
        } else {
          const streamId = frame.readUInt32BE(0) & 0x7fffffff;
          if (streamId === STDOUT_STREAM) stdout.push(Buffer.from(payload));
          else if (streamId === ERROR_STREAM) status.push(Buffer.from(payload));
        }
      }
    };
    sock.once(t.readyEvent, () => {
      sock.write(
        [
          `POST ${t.path} HTTP/1.1`,
          `Host: ${t.hostHeader}`,
          'Connection: Upgrade',
          'Upgrade: SPDY/3.1',
          'X-Stream-Protocol-Version: v4.channel.k8s.io',
          'X-Stream-Protocol-Version: v3.channel.k8s.io',
          'X-Stream-Protocol-Version: v2.channel.k8s.io',
          'X-Stream-Protocol-Version: channel.k8s.io',
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n'),
      );
    });
    sock.on('data', (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d]);
      if (upgradeMs === undefined) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) {
          if (buf.length > 64 * 1024) finish({ ok: false, error: 'oversized response head' });
          return;
        }
        const head = buf.subarray(0, end).toString('latin1');
        const code = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? NaN);
        if (code !== 101) {
          finish({ ok: false, error: `HTTP ${Number.isNaN(code) ? '?' : code}` });
          return;
        }
        if (!/^x-stream-protocol-version:\s*v4\.channel\.k8s\.io\s*$/im.test(head)) {
          finish({ ok: false, error: 'protocol not v4' });
          return;
        }
        upgradeMs = performance.now() - t0;
        buf = buf.subarray(end + 4);
        sock.write(synStream(ERROR_STREAM, storedBlock(nameValueBlock({ streamtype: 'error' }), true)));
        sock.write(synStream(STDOUT_STREAM, storedBlock(nameValueBlock({ streamtype: 'stdout' }), false)));
      }
      frames();
    });
    sock.on('error', (err: NodeJS.ErrnoException) => finish({ ok: false, error: err.code ?? err.message }));
    sock.on('close', () =>
      finish(upgradeMs === undefined ? { ok: false, error: 'closed before 101' } : verdict()),
    );
  });
}

// ---------------------------------------------------------------- the run

function countError(errors: Record<string, number>, kind: string): void {
  errors[kind] = (errors[kind] ?? 0) + 1;
}

/** Runs the load until `stop` resolves (or maxMs); reports when every socket is closed. */
export async function runLoad(
  spec: LoadSpec,
  stop: Promise<void>,
  onFollowersOpen: (ok: number, failed: number) => void,
): Promise<LoadResult> {
  const tls: Tls = { cert: readFileSync(spec.certFile), key: readFileSync(spec.keyFile) };
  const sockets = new Set<Socket>();
  const track = (s: Socket): void => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  };
  const t0 = performance.now();
  let stopping = false;

  // Followers.
  const fol: LoadResult['followers'] = { ok: 0, errors: {}, lines: 0, firstByteMs: [] };
  interface Follower {
    destroy(): void;
    failed: boolean;
    answered: boolean;
    lastData: number;
  }
  const followers: Follower[] = [];
  let answered = 0;
  const answeredAll = Promise.withResolvers<void>();
  const onAnswer = (f: Follower): void => {
    if (f.answered) return;
    f.answered = true;
    if (++answered === spec.followers) answeredAll.resolve();
  };
  for (let i = 0; i < spec.followers; i++) {
    const pod = spec.pods[i % spec.pods.length] ?? '';
    const started = performance.now();
    const f: Follower = { destroy: () => undefined, failed: false, answered: false, lastData: NaN };
    const fail = (kind: string): void => {
      onAnswer(f);
      if (f.failed || stopping) return;
      f.failed = true;
      countError(fol.errors, kind);
    };
    const req = httpsRequest(
      {
        host: spec.host,
        port: spec.port,
        method: 'GET',
        path: `/containerLogs/${spec.namespace}/${pod}/${spec.container}?follow=true`,
        cert: tls.cert,
        key: tls.key,
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        onAnswer(f);
        if (res.statusCode !== 200) {
          fail(`HTTP ${res.statusCode ?? '?'}`);
          res.resume();
          req.destroy();
          return;
        }
        fol.ok++;
        let first = true;
        res.on('data', (d: Buffer) => {
          if (first) {
            first = false;
            fol.firstByteMs.push(performance.now() - started);
          }
          f.lastData = performance.now();
          for (const c of d) if (c === 0x0a) fol.lines++;
        });
        res.on('end', () => fail('ended early'));
        res.on('error', (err: NodeJS.ErrnoException) => fail(err.code ?? err.message));
      },
    );
    req.on('socket', (s) => track(s));
    req.on('error', (err: NodeJS.ErrnoException) => fail(err.code ?? err.message));
    req.end();
    f.destroy = () => req.destroy();
    followers.push(f);
  }
  // Reported to the main thread once every follower answered (or 10 s passed).
  void Promise.race([answeredAll.promise, new Promise((r) => setTimeout(r, 10_000))]).then(() =>
    onFollowersOpen(fol.ok, followers.filter((f) => f.failed).length),
  );

  // Exec, open loop.
  const ex: LoadResult['exec'] = {
    started: 0,
    ok: 0,
    errors: {},
    latencyMs: [],
    upgradeMs: [],
    maxInFlight: 0,
  };
  const inFlight = new Set<Promise<void>>();
  const intervalMs = 1000 / spec.execPerSec;
  let k = 0;
  let tick: NodeJS.Timeout | undefined;
  const launch = (): void => {
    const pod = spec.pods[k % spec.pods.length] ?? '';
    ex.started++;
    if (inFlight.size >= spec.maxInFlight) {
      countError(ex.errors, 'in-flight cap');
      return;
    }
    const expect = `hi${k}`;
    const target: ExecTarget = {
      connect: () =>
        tlsConnect({
          host: spec.host,
          port: spec.port,
          cert: tls.cert,
          key: tls.key,
          // As kube-apiserver without --kubelet-certificate-authority: the serving cert is self-signed.
          rejectUnauthorized: false,
        }),
      readyEvent: 'secureConnect',
      hostHeader: `${spec.host}:${spec.port}`,
      path:
        `/exec/${spec.namespace}/${pod}/${spec.container}?` +
        new URLSearchParams([
          ['command', 'echo'],
          ['command', expect],
          ['output', '1'],
        ]).toString(),
      timeoutMs: spec.execTimeoutMs,
      expect,
    };
    const p = execOnce(target, track).then((o) => {
      if (o.ok) {
        ex.ok++;
        ex.latencyMs.push(o.totalMs);
        ex.upgradeMs.push(o.upgradeMs);
      } else {
        countError(ex.errors, o.error);
      }
      inFlight.delete(p);
    });
    inFlight.add(p);
    ex.maxInFlight = Math.max(ex.maxInFlight, inFlight.size);
  };
  const schedule = (): void => {
    if (stopping) return;
    const now = performance.now();
    while (t0 + k * intervalMs <= now) {
      launch();
      k++;
    }
    tick = setTimeout(schedule, Math.max(1, t0 + k * intervalMs - performance.now()));
  };
  schedule();

  let cap: NodeJS.Timeout | undefined;
  await Promise.race([stop, new Promise<void>((r) => (cap = setTimeout(r, spec.maxMs)))]);
  clearTimeout(cap);
  stopping = true;
  const durationMs = performance.now() - t0;
  clearTimeout(tick);
  // A follower that still works has had a line within stallMs; then all are closed.
  const now = performance.now();
  for (const f of followers) {
    if (!f.failed && f.answered && !(now - f.lastData <= spec.stallMs)) {
      f.failed = true;
      countError(fol.errors, 'stalled');
    }
    f.destroy();
  }
  // Execs in flight finish (each is bounded by its timeout), then every socket must close.
  await Promise.all(inFlight);
  const deadline = Date.now() + 5_000;
  while (sockets.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const socketsLeft = sockets.size;
  for (const s of sockets) s.destroy();
  return { durationMs, followers: fol, exec: ex, socketsLeft };
}

// ---------------------------------------------------------------- worker entry

if (!isMainThread && parentPort && (workerData as { apiload?: LoadSpec } | undefined)?.apiload) {
  const port = parentPort;
  const spec = (workerData as { apiload: LoadSpec }).apiload;
  const stop = Promise.withResolvers<void>();
  port.on('message', (m: ToWorker) => {
    if (m.type === 'stop') stop.resolve();
  });
  const result = await runLoad(spec, stop.promise, (ok, failed) =>
    port.postMessage({ type: 'followers-open', ok, failed } satisfies FromWorker),
  );
  port.postMessage({ type: 'result', result } satisfies FromWorker);
  port.close();
}
