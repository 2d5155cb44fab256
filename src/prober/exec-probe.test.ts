import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KubeletError } from '../util/errors.ts';
import { execProbe, type ExecFn } from './exec-probe.ts';

function fakeExec(
  result: { stdout?: string | Buffer; stderr?: string; exitCode?: number } | Error,
): ExecFn & {
  seen: { containerId: string; cmd: string[]; timeoutSeconds: number }[];
} {
  const seen: { containerId: string; cmd: string[]; timeoutSeconds: number }[] = [];
  const fn = async (containerId: string, cmd: string[], timeoutSeconds: number) => {
    seen.push({ containerId, cmd, timeoutSeconds });
    await Promise.resolve();
    if (result instanceof Error) throw result;
    return {
      stdout: Buffer.from(result.stdout ?? ''),
      stderr: Buffer.from(result.stderr ?? ''),
      exitCode: result.exitCode ?? 0,
    };
  };
  return Object.assign(fn, { seen });
}

describe('exec probe', () => {
  it('succeeds on exit code 0 with stdout then stderr as output, passing the timeout to ExecSync', async () => {
    const exec = fakeExec({ stdout: 'out\n', stderr: 'err\n' });
    assert.deepEqual(await execProbe(exec, 'c1', ['cat', '/tmp/ok'], 3), {
      result: 'success',
      output: 'out\nerr\n',
    });
    assert.deepEqual(exec.seen, [{ containerId: 'c1', cmd: ['cat', '/tmp/ok'], timeoutSeconds: 3 }]);
  });

  it('fails on a non-zero exit code', async () => {
    const exec = fakeExec({ stderr: 'cat: /tmp/ok: No such file', exitCode: 1 });
    assert.deepEqual(await execProbe(exec, 'c1', ['cat', '/tmp/ok'], 1), {
      result: 'failure',
      output: 'cat: /tmp/ok: No such file',
    });
  });

  it('fails when the command times out (DeadlineExceeded, or containerd 1.6 "timeout … exceeded")', async () => {
    for (const err of [
      new KubeletError('DeadlineExceeded', 'CRI ExecSync', 'deadline exceeded'),
      new KubeletError('Unknown', 'CRI ExecSync', 'timeout 1s exceeded: <nil>'),
    ]) {
      assert.deepEqual(await execProbe(fakeExec(err), 'c1', ['sleep', '5'], 1), {
        result: 'failure',
        output: 'command "sleep 5" timed out',
      });
    }
  });

  it('throws other runtime errors: the probe could not conclude', async () => {
    const err = new KubeletError('NotFound', 'CRI ExecSync', 'container not found');
    await assert.rejects(execProbe(fakeExec(err), 'c1', ['true'], 1), err);
  });

  it('keeps only the first 10 KiB of output', async () => {
    const exec = fakeExec({ stdout: 'a'.repeat(8 * 1024), stderr: 'b'.repeat(8 * 1024), exitCode: 2 });
    const out = await execProbe(exec, 'c1', ['x'], 1);
    assert.equal(out.output.length, 10 * 1024);
    assert.equal(out.output.at(-1), 'b');
  });
});
