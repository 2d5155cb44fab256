import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { IMAGE, podManifest, setupEnv, writeManifest, type Env } from '../kit/bed.ts';

const run = promisify(execFile);
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'tskubelet');

async function runOnce(env: Env): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(
      BIN,
      [
        'run',
        '--runonce',
        '--pod-manifest-path',
        env.manifests,
        '--container-runtime-endpoint',
        env.bed.endpoint,
        '--root-dir',
        env.rootDir,
        '--hostname-override',
        'runonce',
        '--log-format',
        'text',
      ],
      { timeout: 120_000 },
    );
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('--runonce', () => {
  let env: Env;
  before(async () => {
    env = await setupEnv();
    await mkdir(env.manifests, { recursive: true });
  });
  after(async () => {
    await env?.close();
  });

  it('runs every pod once and exits 0 when all started', async () => {
    await writeManifest(
      env,
      'a.yaml',
      podManifest('a', { containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }] }),
    );
    await writeManifest(
      env,
      'b.yaml',
      podManifest('b', {
        initContainers: [{ name: 'init', image: IMAGE, command: ['true'] }],
        containers: [{ name: 'main', image: IMAGE, command: ['sleep', '3600'] }],
      }),
    );
    const r = await runOnce(env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /ok\s+default\/a-runonce .*running/);
    assert.match(r.stdout, /ok\s+default\/b-runonce .*running/);
    assert.match(r.stdout, /run-once: 2 started, 0 failed/);
  });

  it('exits non-zero and names the pod when one cannot start', async () => {
    await writeManifest(
      env,
      'c.yaml',
      podManifest('c', {
        restartPolicy: 'Never',
        containers: [{ name: 'main', image: IMAGE, command: ['sh', '-c', 'exit 1'] }],
      }),
    );
    const r = await runOnce(env);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /FAILED default\/c-runonce/);
    assert.match(r.stdout, /run-once: 2 started, 1 failed/);
  });
});
