// A kubelet that cannot start must exit with an error (upstream: klog.Fatal, and systemd restarts
// it), not keep running with loops it started on the way: a start failure once left the container
// log rotation running, logging "CRI client is closed" every 10 s and ignoring the failure.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

describe('a kubelet that cannot start', () => {
  let dir: string | undefined;
  after(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

  it('exits non-zero with the reason when its serving certificate cannot be read', async () => {
    dir = await mkdtemp(join(tmpdir(), 'tsk-start-failure-'));
    const main = join(import.meta.dirname, 'main.ts');
    const args = [
      main,
      'run',
      `--root-dir=${join(dir, 'root')}`,
      `--pod-manifest-path=${join(dir, 'manifests')}`,
      `--container-runtime-endpoint=unix://${join(dir, 'no-runtime.sock')}`,
      '--port=10299',
      '--read-only-port=0',
      '--healthz-port=0',
      '--cgroups-per-qos=false',
      '--enforce-node-allocatable=',
      '--tls-cert-file=/nonexistent/kubelet.crt',
      '--tls-private-key-file=/nonexistent/kubelet.key',
    ];
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      // A kubelet still running after 60 s did not stop on its failure.
      const child = execFile(
        process.execPath,
        args,
        { timeout: 60_000, killSignal: 'SIGKILL' },
        (err, _out, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stderr }),
      );
      child.stdin?.end();
    });
    assert.equal(
      result.code,
      1,
      `exit code (null: killed after 60 s) — stderr: ${result.stderr.slice(-500)}`,
    );
    assert.match(result.stderr, /tlsCertFile: \/nonexistent\/kubelet\.crt/);
  });
});
