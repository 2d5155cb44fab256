// `--version` (src/cli/version.ts); upstream: k8s.io/component-base/version/verflag/verflag.go and
// kubeadm's preflight GetKubeletVersion (cmd/kubeadm/app/preflight/utils.go).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompiledConfig } from '../config/index.ts';
import { buildRunCommand } from './flags.ts';
import { parseVersionFlag, versionText, type VersionRequest } from './version.ts';

/** kubeadm 1.20's regular expression for `kubelet --version` (preflight/utils.go). */
const KUBEADM_KUBELET_VERSION =
  /^\s*Kubernetes v((0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-0-9a-zA-Z_.+]*)?)\s*$/;

describe('versionText', () => {
  it('prints "Kubernetes <version>" in the form kubeadm join parses, 1.20.2 with tskubelet\'s version after it', () => {
    const text = versionText('true', 'v0.1.0');
    assert.equal(text, 'Kubernetes v1.20.2-tskubelet.0.1.0\n');
    const m = KUBEADM_KUBELET_VERSION.exec(text.trim());
    assert.equal(m?.[1], '1.20.2-tskubelet.0.1.0');
    assert.deepEqual([m?.[2], m?.[3], m?.[4]], ['1', '20', '2']);
  });

  it('prints the version.Info struct for --version=raw, and nothing for --version=false', () => {
    const raw = versionText('raw', 'v0.1.0');
    assert.match(
      raw,
      /^version\.Info\{Major:"1", Minor:"20", GitVersion:"v1\.20\.2-tskubelet\.0\.1\.0", GitCommit:"", GitTreeState:"", BuildDate:"", GoVersion:"node\d+\.\d+\.\d+", Compiler:"tskubelet", Platform:"linux\/\w+"\}\n$/,
    );
    assert.equal(versionText('false', 'v0.1.0'), '');
  });
});

describe('--version', () => {
  it('reads raw and Go booleans, and refuses anything else as ParseBool does', () => {
    assert.equal(parseVersionFlag('raw'), 'raw');
    assert.equal(parseVersionFlag('true'), 'true');
    assert.equal(parseVersionFlag('T'), 'true');
    assert.equal(parseVersionFlag('0'), 'false');
    assert.throws(() => parseVersionFlag('yes'), /strconv\.ParseBool: parsing "yes": invalid syntax/);
  });

  const runWith = async (argv: string[]) => {
    const versions: VersionRequest[] = [];
    const runs: CompiledConfig[] = [];
    const cmd = buildRunCommand(
      async (r) => {
        runs.push(r);
        return Promise.resolve();
      },
      { hostname: () => 'test-host', cwd: '/work' },
      (request) => versions.push(request),
    );
    cmd.exitOverride();
    await cmd.parseAsync(argv, { from: 'user' });
    return { versions, runs };
  };

  it('prints before reading --config or checking the gates, as upstream (verflag before SetFromMap)', async () => {
    const { versions, runs } = await runWith([
      '--feature-gates=NoSuchGate=true',
      '--config=/nonexistent/kubelet.yaml',
      '--version',
    ]);
    assert.deepEqual(versions, ['true']);
    assert.deepEqual(runs, []);
    assert.deepEqual((await runWith(['--version=raw'])).versions, ['raw']);
  });

  it('runs the kubelet for --version=false', async () => {
    const { versions, runs } = await runWith(['--version=false']);
    assert.deepEqual(versions, []);
    assert.equal(runs.length, 1);
  });
});
