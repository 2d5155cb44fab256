import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { Pod } from '../api/types.ts';
import { recordingLogger } from '../util/testing.ts';
import { createHttpSource } from './http-source.ts';
import { manifest, snapshotRecorder } from './testing.ts';
import type { PodSource, SourceProblem } from './types.ts';

interface Reply {
  status: number;
  body: string;
}

const names = (pods: Pod[]) => pods.map((p) => p.metadata.name);

describe('http source', () => {
  let server: Server;
  let url: string;
  let replies: Reply[];
  let requests: IncomingHttpHeaders[];
  let source: PodSource | undefined;
  /** Resolves when the server has answered `n` requests in total. */
  let waitRequests: (n: number) => Promise<void>;

  beforeEach(async () => {
    replies = [];
    requests = [];
    const waiters: { n: number; resolve: () => void }[] = [];
    waitRequests = (n) =>
      requests.length >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }));
    server = createServer((req, res) => {
      requests.push(req.headers);
      // The last reply repeats once the scripted ones run out.
      const reply = (replies.length > 1 ? replies.shift() : replies[0]) ?? { status: 404, body: '' };
      res.writeHead(reply.status, { 'content-type': 'application/yaml' });
      res.end(reply.body, () => {
        for (const w of waiters.filter((w) => requests.length >= w.n)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pods`;
  });

  afterEach(async () => {
    await source?.stop();
    source = undefined;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  function start(
    extra: {
      onProblem?: (p: SourceProblem) => void;
      headers?: Record<string, string[]>;
      fetchTimeoutMs?: number;
    } = {},
  ) {
    const rec = snapshotRecorder();
    const logger = recordingLogger();
    source = createHttpSource({
      url,
      headers: extra.headers ?? {},
      nodeName: 'node1',
      checkFrequencyMs: 10,
      logger,
      onProblem: extra.onProblem,
      fetchTimeoutMs: extra.fetchTimeoutMs,
    });
    const first = rec.next();
    source.start(rec.send);
    return { rec, first, logger };
  }

  it('reads a single Pod and sends the configured headers, repeated values included', async () => {
    replies = [{ status: 200, body: JSON.stringify(manifest('web')) }];
    const { first } = start({ headers: { 'X-Token': ['abc'], 'X-Multi': ['one', 'two'] } });
    const pods = await first;
    assert.deepEqual(names(pods), ['web-node1']);
    assert.equal(pods[0]?.metadata.annotations?.['kubernetes.io/config.source'], 'http');
    assert.equal(pods[0]?.spec.tolerations, undefined);
    assert.equal(requests[0]?.['x-token'], 'abc');
    assert.equal(requests[0]?.['x-multi'], 'one, two');
  });

  it('reads a YAML PodList whose items leave out apiVersion and kind', async () => {
    replies = [
      {
        status: 200,
        body: [
          'apiVersion: v1',
          'kind: PodList',
          'items:',
          '- metadata: {name: a}',
          '  spec: {containers: [{name: c, image: "x:1"}]}',
          '- metadata: {name: b}',
          '  spec: {containers: [{name: c, image: "x:1"}]}',
          '',
        ].join('\n'),
      },
    ];
    const { first } = start();
    assert.deepEqual(names(await first), ['a-node1', 'b-node1']);
  });

  it('does not send the same body twice', async () => {
    replies = [{ status: 200, body: JSON.stringify(manifest('web')) }];
    const { rec, first } = start();
    await first;
    await waitRequests(5);
    assert.equal(rec.seen.length, 1);
    const changed = rec.next();
    replies = [{ status: 200, body: JSON.stringify(manifest('web', 'busybox:1.30')) }];
    const [pod] = await changed;
    assert.equal(pod?.spec.containers[0]?.image, 'busybox:1.30');
  });

  it('keeps the last snapshot through 500s, logs the first failures loudly and the recovery at info', async () => {
    replies = [{ status: 200, body: JSON.stringify(manifest('web')) }];
    const problems: SourceProblem[] = [];
    const { rec, first, logger } = start({ onProblem: (p) => problems.push(p) });
    await first;
    const seenBefore = requests.length;
    replies = [
      ...Array<Reply>(6).fill({ status: 500, body: 'boom' }),
      { status: 200, body: JSON.stringify(manifest('web2')) },
    ];
    const recovered = await rec.next();
    assert.deepEqual(names(recovered), ['web2-node1']);
    assert.ok(requests.length >= seenBefore + 7);
    // Nothing was sent while the server failed.
    assert.equal(rec.seen.length, 2);
    const failures = logger.lines.filter((l) => l.msg.startsWith('Failed to read pods from URL'));
    assert.equal(failures.length, 6);
    assert.deepEqual(
      failures.map((l) => l.level),
      ['warn', 'warn', 'warn', 'debug', 'debug', 'debug'],
    );
    assert.match(String(failures[0]?.fields.error), /500 Internal Server Error/);
    const recovery = logger.lines.find((l) => l.msg === 'Successfully read pods from URL');
    assert.equal(recovery?.level, 'info');
    assert.equal(recovery?.fields.failuresBefore, 6);
    assert.equal(problems.length, 1, 'identical failures are reported once');
    assert.equal(problems[0]?.reason, 'FetchFailed');
  });

  it('rejects a PodList with one invalid item as a whole', async () => {
    const list = { apiVersion: 'v1', kind: 'PodList', items: [manifest('a'), manifest('b', '')] };
    replies = [
      { status: 200, body: JSON.stringify(manifest('web')) },
      { status: 200, body: JSON.stringify(list) },
    ];
    const problems: SourceProblem[] = [];
    const { rec, first } = start({ onProblem: (p) => problems.push(p) });
    await first;
    await waitRequests(4);
    assert.equal(rec.seen.length, 1);
    assert.equal(problems[0]?.reason, 'InvalidManifest');
    assert.match(problems[0]?.message ?? '', /items\[1\].*spec\.containers\[0\]\.image: Required value/);
  });

  it('sends an empty snapshot for an empty 200 body', async () => {
    replies = [
      { status: 200, body: JSON.stringify(manifest('web')) },
      { status: 200, body: '' },
    ];
    const { rec, first } = start();
    await first;
    assert.deepEqual(await rec.next(), []);
  });

  it('gives up on a request after the timeout and tries again', async () => {
    const slow = createServer(() => {
      // Never answers.
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const problems: SourceProblem[] = [];
    const logger = recordingLogger();
    source = createHttpSource({
      url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`,
      headers: {},
      nodeName: 'n',
      checkFrequencyMs: 10,
      fetchTimeoutMs: 50,
      logger,
      onProblem: (p) => problems.push(p),
    });
    source.start(() => assert.fail('nothing to send'));
    while (logger.lines.filter((l) => l.msg.startsWith('Failed')).length < 2)
      await new Promise((r) => setTimeout(r, 10));
    assert.match(problems[0]?.message ?? '', /timeout/i);
    await source.stop();
    source = undefined;
    slow.closeAllConnections();
    await new Promise((resolve) => slow.close(resolve));
  });

  it('stops promptly with a request in flight and sends nothing afterwards', async () => {
    const hanging = createServer(() => {});
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    let connected!: () => void;
    const gotRequest = new Promise<void>((r) => (connected = r));
    hanging.on('request', () => connected());
    const sent: Pod[][] = [];
    const s = createHttpSource({
      url: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`,
      headers: {},
      nodeName: 'n',
      checkFrequencyMs: 10,
      logger: recordingLogger(),
    });
    s.start((pods) => sent.push(pods));
    await gotRequest;
    await s.stop();
    assert.deepEqual(sent, []);
    hanging.closeAllConnections();
    await new Promise((resolve) => hanging.close(resolve));
  });
});
