/**
 * Fuzzed surface `manifest-http`: what a static pod URL answers, served by a loopback HTTP server
 * to the real HTTP source (src/podsource/http-source.ts): a Pod or a PodList (one item broken),
 * as JSON or YAML (corrupt.ts, manifest-text.ts), under any status code and content headers, and
 * transport faults — an empty body, a connection cut mid-body, a body that never ends, one over
 * the 10 MiB limit, a gzip header on a body that is not gzip.
 *
 * Accepted: the source sent the pods. Rejected: it reported a problem (and kept its previous
 * snapshot), whose message must name the broken field, the status code or the transport failure.
 * The body of a complete 200 answer also goes through the decode path directly, where anything
 * thrown that is not an InvalidArgument KubeletError is a crash, and what it accepts through the
 * kubelet's first steps (consumers.ts).
 */
import fc from 'fast-check';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stringify } from 'yaml';
import type { KubeletPod } from '../../../src/api/types.ts';
import { MAX_MANIFEST_BYTES } from '../../../src/config/defaults.ts';
import { createHttpSource } from '../../../src/podsource/http-source.ts';
import type { SourceProblem } from '../../../src/podsource/types.ts';
import { nullLogger } from '../../../src/util/logger.ts';
import type { FuzzSurface } from '../scenario.ts';
import { corruptPod, type Corrupted } from './corrupt.ts';
import { runSurface, type Expectation, type FuzzInput, type Verdict } from './harness.ts';
import { boundFor, decodeVerdict } from './manifest-file.ts';
import { manifestText } from './manifest-text.ts';
import { validPod, type Json } from './pod-arbitrary.ts';

type Mode = 'complete' | 'chunked' | 'cut' | 'never-ends' | 'hang-up' | 'too-large' | 'bad-gzip';

interface HttpInput extends FuzzInput {
  status: number;
  headers: Record<string, string>;
  body: string;
  mode: Mode;
}

const FETCH_TIMEOUT_MS = 250;

const contentTypes = fc.constantFrom(
  'application/json',
  'application/yaml',
  'text/plain; charset=utf-8',
  'text/html',
  'application/octet-stream',
  'application/json; charset=latin1',
);

/** A PodList of 1-3 pods, one of them (maybe) broken; items without apiVersion/kind, as lists have them. */
const podList: fc.Arbitrary<{ text: string; expect: Expectation }> = fc
  .tuple(
    fc.array(validPod({ from: 'manifest' }), { minLength: 0, maxLength: 2 }),
    corruptPod(validPod({ from: 'manifest' }), { validated: true, deep: 'sentinel' }),
    fc.nat(),
    fc.boolean(),
    fc.constantFrom('json', 'yaml'),
  )
  .map(([others, broken, at, stripKinds, format]: [Json[], Corrupted, number, boolean, string]) => {
    const items: Json[] = [...others];
    const i = at % (items.length + 1);
    items.splice(i, 0, broken.doc);
    // Distinct names: two valid items of one name would be a (reported) duplicate, not this case.
    items.forEach((item, k) => {
      const m = (item as { metadata?: { name?: unknown } }).metadata;
      if (k !== i && m && typeof m.name === 'string') m.name = `${m.name}-${k}`;
      if (stripKinds && k !== i && item && typeof item === 'object' && !Array.isArray(item)) {
        delete item.apiVersion;
        delete item.kind;
      }
    });
    const list = { apiVersion: 'v1', kind: 'PodList', items };
    const text = format === 'yaml' ? stringify(list, { lineWidth: 0, version: '1.1' }) : JSON.stringify(list);
    return {
      text: text.replace(
        /"?__DEEP_(\d+)__"?/g,
        (_m, n: string) => '['.repeat(Number(n)) + ']'.repeat(Number(n)),
      ),
      expect: {
        what: `PodList of ${items.length}, items[${i}]: ${broken.expect.what}`,
        mustReject: broken.expect.mustReject,
        // A refusal names the item and, inside it, the field.
        names: broken.expect.names.length > 0 ? [...broken.expect.names, /nested/] : [],
      },
    };
  });

const bodies = fc.oneof(
  {
    arbitrary: manifestText(
      corruptPod(validPod({ from: 'manifest' }), { validated: true, deep: 'sentinel' }),
    ),
    weight: 6,
  },
  { arbitrary: podList, weight: 3 },
);

const ok: fc.Arbitrary<HttpInput> = fc
  .tuple(bodies, contentTypes, fc.constantFrom<Mode>('complete', 'complete', 'complete', 'chunked'))
  .map(([b, type, mode]) => ({
    status: 200,
    headers: { 'content-type': type },
    body: b.text,
    mode,
    // An empty 200 body has its own message (and an empty snapshot, as upstream).
    expect:
      b.text === ''
        ? { what: `200 ${mode}: empty: ${b.expect.what}`, mustReject: true, names: [/zero-length/] }
        : { ...b.expect, what: `200 ${mode}: ${b.expect.what}` },
  }));

const notOk: fc.Arbitrary<HttpInput> = fc
  .tuple(fc.constantFrom(201, 204, 301, 304, 400, 401, 403, 404, 418, 429, 500, 502, 503), bodies)
  .map(([status, b]) => ({
    status,
    // A redirect leads to a path that is not there (fetch follows redirects, as Go's client does).
    headers: { 'content-type': 'text/plain', ...(status === 301 ? { location: '/moved' } : {}) },
    body: status === 204 || status === 304 ? '' : b.text,
    mode: 'complete' as const,
    expect: { what: `${status}: ${b.expect.what}`, mustReject: true, names: [String(status), '404'] },
  }));

/** What a refusal of each transport fault must say. */
const FAULT_NAMES: Record<Mode, RegExp[]> = {
  cut: [/terminated|closed|reading body|socket|aborted/i],
  'never-ends': [/timeout|timed out|aborted/i],
  'hang-up': [/fetch failed.*(socket|closed|reset|hang up)|other side closed/i],
  'too-large': [/larger than \d+ bytes/],
  // A body too short to be gzip at all may decompress to nothing.
  'bad-gzip': [/reading body|decompress|header|zlib|gzip|terminated|zero-length/i],
  complete: [],
  chunked: [],
};

const faults: fc.Arbitrary<HttpInput> = fc
  .tuple(fc.constantFrom<Mode>('cut', 'never-ends', 'hang-up', 'too-large', 'bad-gzip'), bodies)
  .map(([mode, b]) => ({
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: b.text,
    mode,
    expect: {
      what: `${mode}: ${b.expect.what}`,
      mustReject: true,
      names: [...FAULT_NAMES[mode], ...(b.text === '' ? [/zero-length/] : [])],
    },
  }));

const empty: fc.Arbitrary<HttpInput> = fc.constant({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: '',
  mode: 'complete' as const,
  expect: { what: '200 with an empty body', mustReject: true, names: [/zero-length/] },
});

export const manifestHttpArbitrary: fc.Arbitrary<HttpInput> = fc.oneof(
  { arbitrary: ok, weight: 12 },
  { arbitrary: notOk, weight: 2 },
  { arbitrary: faults, weight: 2 },
  { arbitrary: empty, weight: 1 },
);

/** Serves whatever the current case says. */
function serve(res: ServerResponse, req: IncomingMessage, c: HttpInput): void {
  const body = Buffer.from(c.body, 'utf8');
  switch (c.mode) {
    case 'hang-up':
      req.socket.destroy();
      return;
    case 'never-ends':
      res.writeHead(200, { ...c.headers, 'content-length': String(body.length + 100) });
      res.write(body.subarray(0, Math.floor(body.length / 2)));
      return; // ended when the server closes connections after the case
    case 'cut':
      res.writeHead(200, { ...c.headers, 'content-length': String(body.length + 100) });
      res.write(body.subarray(0, Math.floor(body.length / 2)), () => req.socket.destroy());
      return;
    case 'too-large': {
      res.writeHead(200, c.headers);
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      const more = (): void => {
        while (sent <= MAX_MANIFEST_BYTES + chunk.length) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', more);
            return;
          }
        }
        res.end();
      };
      res.on('error', () => undefined);
      more();
      return;
    }
    case 'bad-gzip':
      res.writeHead(200, { ...c.headers, 'content-encoding': 'gzip', 'content-length': String(body.length) });
      res.end(body);
      return;
    case 'chunked':
      res.writeHead(c.status, c.headers);
      for (let i = 0; i < body.length; i += 4096) res.write(body.subarray(i, i + 4096));
      res.end();
      return;
    case 'complete':
      res.writeHead(c.status, { ...c.headers, 'content-length': String(body.length) });
      res.end(body);
      return;
  }
}

/** The real HTTP source against the case: its first snapshot or first problem. */
function readThroughHttpSource(
  url: string,
  signal: AbortSignal,
): Promise<{ pods?: KubeletPod[]; problem?: SourceProblem }> {
  return new Promise((resolve) => {
    let done = false;
    const got: { pods?: KubeletPod[]; problem?: SourceProblem } = {};
    const finish = () => {
      if (done) return;
      done = true;
      void source.stop().then(() => resolve(got));
    };
    const source = createHttpSource({
      url,
      headers: { 'x-fuzz': ['1'] },
      nodeName: 'fuzz-node',
      checkFrequencyMs: 3_600_000,
      fetchTimeoutMs: FETCH_TIMEOUT_MS,
      logger: nullLogger,
      onProblem: (problem) => {
        got.problem = problem;
        finish();
      },
    });
    signal.addEventListener('abort', finish, { once: true });
    source.start((pods) => {
      got.pods = pods;
      // An empty body sends an empty snapshot and reports the problem right after.
      if (pods.length > 0) finish();
    });
  });
}

export const manifestHttpSurface: FuzzSurface = {
  id: 'manifest-http',
  title:
    'Static pod URL answers to the HTTP source (bodies, status codes, headers, cut and endless transfers)',
  async run(opts) {
    let current: HttpInput | undefined;
    const server = createServer((req, res) => {
      if (req.url === '/moved') res.writeHead(404, { 'content-type': 'text/plain' }).end('not here');
      else if (current) serve(res, req, current);
      else res.writeHead(500).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    let n = 0;
    try {
      return await runSurface<HttpInput>(
        {
          id: 'manifest-http',
          arbitrary: manifestHttpArbitrary,
          caseTimeoutMs: (input) => boundFor(input.body) + FETCH_TIMEOUT_MS,
          async exec(input, signal) {
            const url = `http://127.0.0.1:${port}/pods/${n++}`;
            if (input.status === 200 && input.mode === 'complete' && input.body !== '') {
              const direct = await decodeVerdict('http', input.body, url);
              if (direct.kind === 'crash') return direct;
            }
            current = input;
            const got = await readThroughHttpSource(url, signal);
            server.closeAllConnections();
            current = undefined;
            if (got.pods && got.pods.length > 0) return { kind: 'accepted' };
            if (got.problem) return { kind: 'rejected', message: got.problem.message };
            return {
              kind: 'crash',
              detail: 'the source neither sent pods nor reported a problem',
            } satisfies Verdict;
          },
        },
        opts,
      );
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  },
};
