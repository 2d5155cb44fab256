// Which command a command line means (src/cli/argv.ts); upstream: cmd/kubelet/app/server.go takes
// every argument as a flag of the one kubelet command.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { routeArgs } from './argv.ts';

describe('routeArgs', () => {
  it('takes a command line that starts with a flag as the kubelet command line (run)', () => {
    assert.deepEqual(
      routeArgs(['--kubeconfig=/etc/kubernetes/kubelet.conf', '--config', 'c.yaml'], 'tskubelet'),
      ['run', '--kubeconfig=/etc/kubernetes/kubelet.conf', '--config', 'c.yaml'],
    );
    assert.deepEqual(routeArgs(['--version'], 'tskubelet'), ['run', '--version']);
    assert.deepEqual(routeArgs(['-v', '3'], 'tskubelet'), ['run', '-v', '3']);
  });

  it('keeps the node CLI verbs, run itself and help', () => {
    for (const args of [
      ['run', '--max-pods=9'],
      ['version'],
      ['get', 'pods'],
      ['describe', 'pod', 'web'],
      ['logs', 'web', '-f'],
      ['exec', 'web', '--', 'ls'],
      ['timeline', 'web'],
      ['why', 'web'],
      ['help'],
      ['--help'],
      ['-h'],
      [],
    ]) {
      assert.deepEqual(routeArgs(args, 'tskubelet'), args, args.join(' '));
    }
  });

  it('takes every command line as the kubelet command line when invoked as kubelet, none included', () => {
    assert.deepEqual(routeArgs([], 'kubelet'), ['run']);
    assert.deepEqual(routeArgs(['--help'], 'kubelet'), ['run', '--help']);
    // As upstream: `kubelet version` is an unknown command (run refuses the argument).
    assert.deepEqual(routeArgs(['version'], 'kubelet'), ['run', 'version']);
  });
});

describe('the tskubelet program (src/cli/main.ts)', () => {
  const main = join(import.meta.dirname, 'main.ts');
  const spawn = async (args: string[], env: Record<string, string> = {}) => {
    try {
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [main, ...args], {
        env: { ...process.env, ...env },
        timeout: 30_000,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  };

  it('prints the kubelet version line for a leading --version, and as kubelet, and exits 0', async () => {
    const plain = await spawn(['--version']);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /^Kubernetes v1\.20\.2-tskubelet\.\d+\.\d+\.\d+\n$/);
    const asKubelet = await spawn(['--version=raw'], { TSKUBELET_INVOKED_AS: 'kubelet' });
    assert.equal(asKubelet.code, 0, asKubelet.stderr);
    assert.match(
      asKubelet.stdout,
      /^version\.Info\{Major:"1", Minor:"20", GitVersion:"v1\.20\.2-tskubelet\./,
    );
    const verb = await spawn(['version']);
    assert.match(verb.stdout, /^tskubelet v\d+\.\d+\.\d+\n$/);
  });

  it("fails with upstream's message and a non-zero exit for an unknown feature gate, before starting", async () => {
    const r = await spawn(['--feature-gates=NoSuchGate=true', '--root-dir=/nonexistent/tskubelet-test']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--feature-gates: unrecognized feature gate: NoSuchGate/);
    assert.equal(r.stdout, '');
  });
});
