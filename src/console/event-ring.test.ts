import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiEventRecorder } from '../api/event-recorder.ts';
import { createMemoryRecorder } from '../api/events.ts';
import type { KubeletPod } from '../api/types.ts';
import { buildPod } from '../../test/kit/pod.ts';
import {
  createEventRing,
  MAX_EVENT_MESSAGE_CHARS,
  tapApiRecorder,
  tapNodeEvent,
  tapRecorder,
  type ConsoleEvent,
} from './event-ring.ts';

const pod: KubeletPod = buildPod('web', { uid: 'u1', image: 'i' });

void describe('event ring', () => {
  void it('keeps only the last `capacity` events, oldest first, numbered in order', () => {
    const ring = createEventRing({ capacity: 3, now: () => Date.UTC(2026, 10, 24, 20) });
    for (let i = 1; i <= 5; i++) ring.record('Normal', `R${i}`, `m${i}`, { kind: 'Pod', name: 'p' });
    const list = ring.list();
    assert.deepEqual(
      list.map((e) => [e.seq, e.reason]),
      [
        [3, 'R3'],
        [4, 'R4'],
        [5, 'R5'],
      ],
    );
    assert.equal(list[0]?.at, '2026-11-24T20:00:00.000Z');
  });

  void it('holds fewer than capacity until it fills', () => {
    const ring = createEventRing({ capacity: 200 });
    assert.deepEqual(ring.list(), []);
    ring.record('Warning', 'Failed', 'x', { kind: 'Node', name: 'n' });
    assert.equal(ring.list().length, 1);
    assert.equal(ring.capacity, 200);
  });

  void it('cuts a long message so the ring stays bounded in bytes too', () => {
    const ring = createEventRing({ capacity: 2 });
    ring.record('Normal', 'Long', 'x'.repeat(10_000), { kind: 'Pod', name: 'p' });
    assert.equal(ring.list()[0]?.message.length, MAX_EVENT_MESSAGE_CHARS + 1);
  });

  void it('tells subscribers about each event until they unsubscribe', () => {
    const ring = createEventRing({ capacity: 2 });
    const seen: ConsoleEvent[] = [];
    const off = ring.subscribe((e) => seen.push(e));
    ring.record('Normal', 'A', 'a', { kind: 'Pod', name: 'p' });
    off();
    ring.record('Normal', 'B', 'b', { kind: 'Pod', name: 'p' });
    assert.deepEqual(
      seen.map((e) => e.reason),
      ['A'],
    );
  });

  void it('refuses a capacity that is not a positive integer', () => {
    assert.throws(() => createEventRing({ capacity: 0 }), RangeError);
  });
});

void describe('recorder taps', () => {
  void it('a tapped recorder still records and also keeps the pod event in the ring', () => {
    const ring = createEventRing();
    const inner = createMemoryRecorder();
    tapRecorder(inner, ring).event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    assert.deepEqual(inner.events, [
      {
        pod: 'default/web',
        type: 'Warning',
        reason: 'BackOff',
        message: 'Back-off restarting failed container',
      },
    ]);
    const [e] = ring.list();
    assert.deepEqual(e?.object, { kind: 'Pod', namespace: 'default', name: 'web', uid: 'u1' });
    assert.equal(e?.type, 'Warning');
  });

  void it("cluster mode's recorder keeps node events (eventFor) and pod events, and still posts both", async () => {
    const ring = createEventRing();
    const posted: string[] = [];
    let stopped = false;
    const api: ApiEventRecorder = {
      event: (_p, _t, reason) => posted.push(`pod:${reason}`),
      eventFor: (ref, _t, reason) => posted.push(`${ref.kind}:${reason}`),
      stop: () => {
        stopped = true;
        return Promise.resolve();
      },
    };
    const tapped = tapApiRecorder(api, ring);
    tapped.event(pod, 'Normal', 'Pulled', 'pulled');
    tapped.eventFor(
      { apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'n1' },
      'Normal',
      'NodeReady',
      'ready',
    );
    await tapped.stop();
    assert.deepEqual(posted, ['pod:Pulled', 'Node:NodeReady']);
    assert.deepEqual(
      ring.list().map((e) => `${e.object.kind}:${e.reason}`),
      ['Pod:Pulled', 'Node:NodeReady'],
    );
    assert.ok(stopped);
  });

  void it('standalone node events are kept under the node name and still logged', () => {
    const ring = createEventRing();
    const logged: string[] = [];
    tapNodeEvent((_t, reason) => logged.push(reason), ring, 'node-1')('Warning', 'SystemOOM', 'oom');
    assert.deepEqual(logged, ['SystemOOM']);
    assert.deepEqual(ring.list()[0]?.object, { kind: 'Node', name: 'node-1' });
  });
});
