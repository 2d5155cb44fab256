import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tcpProbe } from './tcp-probe.ts';

/**
 * A listener that never accepts, with a backlog of 0: once one connection fills its queue the
 * kernel drops further SYNs, so a connect hangs — a deterministic TCP timeout on loopback.
 */
async function startBlackhole(): Promise<{ port: number; proc: ChildProcess; filler: Socket }> {
  const proc = spawn('python3', [
    '-c',
    'import socket,sys,time\n' +
      's=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(0)\n' +
      'print(s.getsockname()[1], flush=True)\n' +
      'sys.stdin.read()\n',
  ]);
  const [chunk] = (await once(proc.stdout, 'data')) as [Buffer];
  const port = Number(chunk.toString().trim());
  const filler = connect({ host: '127.0.0.1', port });
  await once(filler, 'connect');
  return { port, proc, filler };
}

describe('tcp probe', () => {
  const server = createServer((s) => s.destroy());
  let port = 0;
  before(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  it('succeeds when a connection opens', async () => {
    assert.deepEqual(await tcpProbe('127.0.0.1', port, 1_000), { result: 'success', output: '' });
  });

  it('fails when the connection is refused', async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const free = (s.address() as AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    assert.deepEqual(await tcpProbe('127.0.0.1', free, 1_000), {
      result: 'failure',
      output: `dial tcp 127.0.0.1:${free}: connect: connection refused`,
    });
  });

  it('fails when the connection does not open within the timeout', async () => {
    const hole = await startBlackhole();
    try {
      assert.deepEqual(await tcpProbe('127.0.0.1', hole.port, 300), {
        result: 'failure',
        output: `dial tcp 127.0.0.1:${hole.port}: i/o timeout`,
      });
    } finally {
      hole.filler.destroy();
      hole.proc.stdin?.end();
      hole.proc.kill();
    }
  });

  it('throws when its caller aborts it', async () => {
    const ctl = new AbortController();
    ctl.abort(new Error('stopped'));
    await assert.rejects(tcpProbe('127.0.0.1', port, 1_000, ctl.signal), /stopped/);
  });
});
