// The kit's process launcher (test/kit/process.ts): no upstream counterpart.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { until } from './poll.ts';
import { spawnLogged } from './process.ts';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kit-process-'));
});
after(() => rm(dir, { recursive: true, force: true }));

describe('spawnLogged', () => {
  it('appends the output to the log file and, once exited, rejects assertRunning with the log', async () => {
    const logFile = join(dir, 'exits.log');
    const p = spawnLogged('sh', ['-c', 'echo hello; exit 3'], { logFile });
    await until('the process to exit', () => p.exited());
    assert.equal(await readFile(logFile, 'utf8'), 'hello\n');
    await assert.rejects(p.assertRunning(), { message: 'sh exited 3: hello\n' });
    await p.stop();
  });

  it('stops a running process with SIGTERM', async () => {
    const p = spawnLogged('sleep', ['30'], { logFile: join(dir, 'term.log') });
    await p.assertRunning();
    await p.stop();
    assert.equal(p.child.signalCode, 'SIGTERM');
  });

  it('kills a process that ignores SIGTERM after the grace period', async () => {
    const logFile = join(dir, 'kill.log');
    const p = spawnLogged('sh', ['-c', "trap '' TERM; echo trapped; while :; do sleep 0.05; done"], {
      logFile,
    });
    await until('the trap to be set', async () => (await readFile(logFile, 'utf8')).includes('trapped'));
    await p.stop(200);
    assert.equal(p.child.signalCode, 'SIGKILL');
  });
});
