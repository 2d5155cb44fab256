import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { Readable, Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { buildPod } from '../../../test/kit/pod.ts';
import type { NodeClient } from './client.ts';
import type { CommandIO } from './get-pods.ts';
import { logsPath, runLogs, validateLogsOptions } from './logs.ts';

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

describe('logs --since, --since-time, --limit-bytes (kubectl logs.go)', () => {
  it('sends --since as sinceSeconds rounded up, and --limit-bytes as limitBytes', () => {
    assert.equal(
      logsPath('default', 'web', 'main', { since: '1m30.5s', limitBytes: 100 }),
      '/containerLogs/default/web/main?sinceSeconds=91&limitBytes=100',
    );
    assert.equal(
      logsPath('default', 'web', 'main', { sinceTime: '2026-11-28T10:00:00+01:00' }),
      '/containerLogs/default/web/main?sinceTime=2026-11-28T09%3A00%3A00Z',
    );
  });
  it('refuses what kubectl refuses', () => {
    assert.throws(
      () => validateLogsOptions({ since: '5s', sinceTime: '2026-11-28T10:00:00Z' }),
      /at most one/,
    );
    assert.throws(() => validateLogsOptions({ since: 'soon' }), /invalid argument "soon" for "--since"/);
    assert.throws(() => validateLogsOptions({ since: '-5s' }), /greater than 0/);
    assert.throws(() => validateLogsOptions({ limitBytes: -1 }), /--limit-bytes must be greater than 0/);
    assert.throws(
      () => validateLogsOptions({ allContainers: true, container: 'x' }),
      /should not be specified/,
    );
    assert.doesNotThrow(() => validateLogsOptions({ since: '10s', limitBytes: 5 }));
  });
});

describe('logs --all-containers', () => {
  const pod = buildPod('web', { containers: ['main', 'side'] });
  pod.spec.initContainers = [{ name: 'init', image: 'busybox' }];
  const asked: string[] = [];
  const client: NodeClient = {
    target: 'fake',
    getJSON: <T>() => Promise.resolve({ items: [pod] } as T),
    getStream: (path: string) => {
      asked.push(path);
      const container = path.split('?')[0]?.split('/').pop() ?? '';
      return Promise.resolve(Readable.from([`${container} line\n`]) as unknown as IncomingMessage);
    },
    upgrade: () => Promise.reject(new Error('not used')),
  };
  it('prints the init containers then the app containers, one after the other', async () => {
    const out = new Capture();
    const io: CommandIO = { out, err: new Capture(), signal: new AbortController().signal, now: Date.now };
    assert.equal(await runLogs(client, 'web', { allContainers: true, tail: 5 }, io), 0);
    assert.equal(out.text, 'init line\nmain line\nside line\n');
    assert.deepEqual(asked, [
      '/containerLogs/default/web/init?tailLines=5',
      '/containerLogs/default/web/main?tailLines=5',
      '/containerLogs/default/web/side?tailLines=5',
    ]);
  });
});
