import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  KUBEADM_DROP_IN,
  expandExecStart,
  parseEnvironmentFile,
  parseServiceUnit,
  serviceCommand,
  splitQuoted,
} from './unit.ts';

/** What kubeadm 1.20 writes (WriteKubeletDynamicEnvFile: `%s=%q`, flags sorted by name). */
const KUBEADM_FLAGS_ENV =
  'KUBELET_KUBEADM_ARGS="--cgroups-per-qos=false --container-runtime=remote ' +
  '--container-runtime-endpoint=/run/tskubelet-bed/containerd.sock --enforce-node-allocatable= ' +
  '--hostname-override=n1 --node-ip=127.0.0.1 --root-dir=/nodes/n1/var/lib/kubelet"\n';

function files(map: Record<string, string>): (p: string) => Promise<string | undefined> {
  return (p) => Promise.resolve(map[p]);
}

void describe('the kubelet unit as systemd reads it', () => {
  void it("starts the kubelet with kubeadm's drop-in and kubeadm-flags.env, as on a kubeadm node", async () => {
    const { argv, env } = await serviceCommand(
      KUBEADM_DROP_IN,
      files({ '/var/lib/kubelet/kubeadm-flags.env': KUBEADM_FLAGS_ENV }),
    );
    assert.deepEqual(argv, [
      '/usr/bin/kubelet',
      '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf',
      '--kubeconfig=/etc/kubernetes/kubelet.conf',
      '--config=/var/lib/kubelet/config.yaml',
      '--cgroups-per-qos=false',
      '--container-runtime=remote',
      '--container-runtime-endpoint=/run/tskubelet-bed/containerd.sock',
      '--enforce-node-allocatable=',
      '--hostname-override=n1',
      '--node-ip=127.0.0.1',
      '--root-dir=/nodes/n1/var/lib/kubelet',
    ]);
    assert.equal(env.get('KUBELET_CONFIG_ARGS'), '--config=/var/lib/kubelet/config.yaml');
  });

  void it('appends KUBELET_EXTRA_ARGS from /etc/default/kubelet last', async () => {
    const { argv } = await serviceCommand(
      KUBEADM_DROP_IN,
      files({
        '/var/lib/kubelet/kubeadm-flags.env': 'KUBELET_KUBEADM_ARGS="--a=1"\n',
        '/etc/default/kubelet': '# operator overrides\nKUBELET_EXTRA_ARGS=--v=4 --b=2\n',
      }),
    );
    assert.deepEqual(argv.slice(-3), ['--a=1', '--v=4', '--b=2']);
  });

  void it('skips a missing optional environment file and refuses a missing required one', async () => {
    const { argv } = await serviceCommand(KUBEADM_DROP_IN, files({}));
    assert.equal(argv.length, 4);
    await assert.rejects(
      serviceCommand('[Service]\nEnvironmentFile=/nope\nExecStart=/bin/k\n', files({})),
      /EnvironmentFile=\/nope does not exist/,
    );
  });

  void it('keeps only the ExecStart= after the last empty one', () => {
    const unit = parseServiceUnit(
      '[Service]\nExecStart=/old\nExecStart=\nExecStart=/new $X\n[Install]\nExecStart=/x\n',
    );
    assert.equal(unit.execStart, '/new $X');
  });

  void it('splits $VAR into words and keeps ${VAR} as one', () => {
    const env = new Map([
      ['A', 'x  y'],
      ['E', ''],
    ]);
    assert.deepEqual(expandExecStart('/k $A $E ${A} --f=${A}', env), ['/k', 'x', 'y', 'x  y', '--f=x  y']);
  });

  void it("reads Go's %q quoting and single quotes in environment files", () => {
    assert.deepEqual(parseEnvironmentFile('A="say \\"hi\\" \\\\ there"\nB=\'$raw\'\n; c\nC=plain value\n'), [
      ['A', 'say "hi" \\ there'],
      ['B', '$raw'],
      ['C', 'plain value'],
    ]);
    assert.deepEqual(splitQuoted('"KUBELET_X=--a --b" Y=1'), ['KUBELET_X=--a --b', 'Y=1']);
    assert.throws(() => splitQuoted('"open'), /unbalanced/);
  });
});
