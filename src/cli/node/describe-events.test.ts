/**
 * describe's Events section, as kubectl's DescribeEvents prints it (k8s.io/kubectl/pkg/describe/
 * describe.go: `Events:  <none>`, else `Type Reason Age From Message` with a `----` line, repeated
 * events as `LAST (xN over FIRST)`, sorted by last time; tabwriter 0/8/2), and the local socket
 * route that serves the kubelet's recent events about a pod.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { buildPod } from '../../../test/kit/pod.ts';
import { createApiHandlers } from '../../server/api-handlers.ts';
import { createLocalSocketServer, type LocalSocketServer } from '../../server/local-socket.ts';
import type { LocalEvent } from '../../server/pod-events.ts';
import { fakeHost, testPod } from '../../server/testing.ts';
import { nullLogger } from '../../util/logger.ts';
import { connectNode } from './client.ts';
import { runDescribePod } from './describe-pod.ts';
import { describePod } from './describe-printer.ts';

const NOW = Date.parse('2026-11-24T20:00:00Z');
const ago = (s: number): string => new Date(NOW - s * 1000).toISOString();

describe('describe Events (kubectl DescribeEvents)', () => {
  const pod = buildPod('web', { containers: ['main'] });
  const tail = (out: string): string => out.slice(out.indexOf('Events:'));
  it('prints <none> when the kubelet recorded nothing about the pod', () => {
    // Aligned with the labels above it: kubectl flushes its tabwriter only before an events table.
    assert.match(tail(describePod(pod, NOW, [])), /^Events: +<none>\n$/);
  });
  it('prints the table, repeated events once with their count, oldest last-seen first', () => {
    const events = [
      {
        at: ago(300),
        type: 'Normal',
        reason: 'Pulled',
        message: 'Container image "busybox" already present on machine',
      },
      { at: ago(300), type: 'Normal', reason: 'Created', message: 'Created container main' },
      { at: ago(290), type: 'Warning', reason: 'BackOff', message: 'Back-off restarting failed container' },
      { at: ago(30), type: 'Warning', reason: 'BackOff', message: 'Back-off restarting failed container' },
    ];
    assert.equal(
      tail(describePod(pod, NOW, events)),
      'Events:\n' +
        '  Type     Reason   Age                  From     Message\n' +
        '  ----     ------   ----                 ----     -------\n' +
        '  Normal   Pulled   5m                   kubelet  Container image "busybox" already present on machine\n' +
        '  Normal   Created  5m                   kubelet  Created container main\n' +
        '  Warning  BackOff  30s (x2 over 4m50s)  kubelet  Back-off restarting failed container\n',
    );
  });
});

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

describe("the local socket serves a pod's recent events to describe", () => {
  let dir: string;
  let server: LocalSocketServer;
  const events: LocalEvent[] = [
    {
      at: ago(60),
      type: 'Normal',
      reason: 'Started',
      message: 'Started container main',
      object: { kind: 'Pod', namespace: 'default', name: 'web' },
    },
    {
      at: ago(50),
      type: 'Normal',
      reason: 'Started',
      message: 'other pod',
      object: { kind: 'Pod', namespace: 'other', name: 'web' },
    },
    {
      at: ago(40),
      type: 'Normal',
      reason: 'NodeReady',
      message: 'node',
      object: { kind: 'Node', name: 'web' },
    },
  ];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tsk-ev-'));
    const handlers = createApiHandlers({
      host: fakeHost([{ pod: testPod('default', 'web', 'uid-1'), status: { phase: 'Running' } }]),
      enableDebuggingHandlers: true,
      enableSystemLogHandler: false,
      streamingIdleTimeoutMs: 1000,
      logger: nullLogger,
    });
    server = createLocalSocketServer({
      path: join(dir, 's.sock'),
      handlers,
      logger: nullLogger,
      events: () => events,
    });
    await server.start();
  });
  after(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });
  it('prints only the events about that pod', async () => {
    const client = await connectNode({ socket: join(dir, 's.sock') });
    const out = new Capture();
    await runDescribePod(
      client,
      'web',
      {},
      { out, err: new Capture(), signal: new AbortController().signal, now: () => NOW },
    );
    assert.match(out.text, /\nEvents:\n {2}Type {4}Reason {3}Age {3}From {5}Message\n/);
    assert.match(out.text, /Normal {2}Started {2}60s {3}kubelet {2}Started container main\n$/);
    assert.doesNotMatch(out.text, /other pod|NodeReady/);
  });
});
