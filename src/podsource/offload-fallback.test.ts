// The decoder thread's failures (offload.ts): a manifest is decoded inline instead, and the
// failure is logged once, with its cause, at warn level. No upstream counterpart (the Go kubelet
// decodes on its own goroutine). A file of its own: these tests need no healthy thread running
// (the thread is shared, and a running one would take the request).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { buildManifest } from '../../test/kit/pod.ts';
import { recordingLogger, type LogLine } from '../util/testing.ts';
import { parseManifest } from './decode.ts';
import { decodePods, INLINE_DECODE_BYTES } from './offload.ts';
import { defaultStaticPod } from './static-pod.ts';

const NODE = 'node-1';
const ORIGIN = '/m/big.yaml';
const MSG = 'manifest decoder thread failed; decoding its manifests inline (the event loop waits for them)';

/** A valid pod above the inline limit. */
const text = stringify(
  buildManifest('big', {
    containers: [
      {
        name: 'c',
        env: Array.from({ length: 4000 }, (_, i) => ({ name: `VAR_${i}`, value: 'x'.repeat(60) })),
      },
    ],
  }),
);
const inline = defaultStaticPod(parseManifest(text, ORIGIN), {
  nodeName: NODE,
  source: 'file',
  origin: ORIGIN,
});

/** A thread module that throws `message` on the first request (uncaught: 'error', then 'exit'). */
function crashing(message: string): URL {
  return new URL(
    `data:text/javascript,${encodeURIComponent(
      `import { parentPort } from 'node:worker_threads'; parentPort.on('message', () => { throw new Error(${JSON.stringify(message)}); });`,
    )}`,
  );
}

const decode = (lines: LogLine[], workerURL?: URL) =>
  decodePods(
    { kind: 'file', text, origin: ORIGIN, nodeName: NODE },
    { logger: recordingLogger(lines), ...(workerURL ? { workerURL } : {}) },
  );

const about = (lines: LogLine[]) => lines.filter((l) => l.msg === MSG);

describe('a failed manifest decoder thread', () => {
  it('decodes inline and warns once, with the cause, when the thread cannot start', async () => {
    assert.ok(text.length > INLINE_DECODE_BYTES);
    const lines: LogLine[] = [];
    const [pod] = await decode(lines, new URL('./no-such-decode-worker.ts', import.meta.url));
    assert.deepEqual(pod, inline);
    const said = about(lines);
    assert.equal(said.length, 1, JSON.stringify(lines));
    assert.equal(said[0]?.level, 'warn');
    assert.match(String(said[0]?.fields.err), /Cannot find module .*no-such-decode-worker\.ts/);
    assert.equal(said[0]?.fields.manifests, 1);
  });

  it('decodes inline and warns once (not for both its error and its exit) when the thread dies', async () => {
    const lines: LogLine[] = [];
    const [pod] = await decode(lines, crashing('decoder blew up'));
    assert.deepEqual(pod, inline);
    // The exit follows the error event: let it arrive before counting.
    await new Promise((r) => setTimeout(r, 200));
    const said = about(lines);
    assert.equal(said.length, 1, JSON.stringify(lines));
    assert.equal(said[0]?.level, 'warn');
    assert.match(String(said[0]?.fields.err), /decoder blew up/);
  });

  it('says a failure with the same cause again at debug level only (a file source re-reads every period)', async () => {
    const lines: LogLine[] = [];
    const stillBroken = crashing('still broken');
    for (let i = 0; i < 3; i++) assert.deepEqual(await decode(lines, stillBroken), [inline]);
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual(
      about(lines).map((l) => [l.level, l.fields.err]),
      [
        ['warn', 'still broken'],
        ['debug', 'still broken'],
        ['debug', 'still broken'],
      ],
    );
  });
});
