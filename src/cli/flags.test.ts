import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Command } from 'commander';
import type { CompiledConfig } from '../config/index.ts';
import { decodeKubeletConfiguration } from '../config/kubelet-config.ts';
import { hasCode } from '../util/errors.ts';
import {
  buildRunCommand,
  parseManifestURLHeader,
  parseNodeLabels,
  parseRegisterWithTaints,
  parseRunArgs,
} from './flags.ts';

const opts = { hostname: () => 'test-host', cwd: '/work' };
const parse = (argv: string[]) => parseRunArgs(argv, opts);

async function assertRejectsInvalid(argv: string[], pattern: RegExp): Promise<void> {
  await assert.rejects(parse(argv), (err: unknown) => {
    assert.ok(hasCode(err, 'InvalidArgument'), `expected InvalidArgument, got ${String(err)}`);
    assert.match(String(err), pattern);
    return true;
  });
}

describe('run flags', () => {
  let dir = '';
  let configFile = '';
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tskubelet-flags-'));
    configFile = path.join(dir, 'kubelet.yaml');
    await writeFile(
      configFile,
      [
        'apiVersion: kubelet.config.k8s.io/v1beta1',
        'kind: KubeletConfiguration',
        'staticPodPath: /etc/kubernetes/manifests',
        'syncFrequency: 30s',
        'fileCheckFrequency: 5s',
        'maxPods: 20',
        'healthzPort: 10300',
        'containerRuntimeEndpoint: unix:///run/file/containerd.sock',
        'staticPodURLHeader:',
        '  X-File: [a]',
        'kernelMemcgNotification: true',
        'kubeAPIQPS: 25',
        'eventBurst: 30',
        'registerNode: false',
        'registerWithTaints:',
        '  - {key: file, value: v, effect: NoSchedule}',
        '',
      ].join('\n'),
    );
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gives upstream defaults with no flags at all', async () => {
    const { config, warnings } = await parse([]);
    assert.deepEqual(warnings, []);
    assert.equal(config.syncFrequencyMs, 60_000);
    assert.equal(config.maxPods, 110);
    assert.equal(config.containerRuntimeEndpoint, 'unix:///run/containerd/containerd.sock');
    assert.equal(config.nodeName, 'test-host');
    assert.equal(config.runOnce, false);
    assert.equal(config.logFormat, 'text');
    assert.equal(config.staticPodPath, undefined);
    assert.equal(config.kubeAPIQPS, 50);
    assert.equal(config.kubeAPIBurst, 100);
    assert.equal(config.eventRecordQPS, 50);
    assert.equal(config.eventBurst, 100);
    assert.equal(config.registerNode, true);
    assert.deepEqual(config.registerWithTaints, []);
    assert.deepEqual(config.nodeLabels, {});
  });

  it('maps every implemented flag onto the config, in both --flag=value and --flag value forms', async () => {
    const { config } = await parse([
      '--pod-manifest-path=/srv/manifests',
      '--manifest-url',
      'http://example.test/pods',
      '--manifest-url-header=Authorization:Bearer t',
      '--sync-frequency=15s',
      '--file-check-frequency',
      '2s',
      '--http-check-frequency=1m',
      '--node-status-update-frequency=3s',
      '--runtime-request-timeout=30s',
      '--container-runtime-endpoint=/run/c.sock',
      '--max-pods=7',
      '--healthz-port',
      '0',
      '--healthz-bind-address=0.0.0.0',
      '--address=127.0.0.1',
      '--port=10260',
      '--read-only-port=10265',
      '--root-dir=/tmp/kubelet-root',
      '--hostname-override=Worker-1',
      '--node-ip=10.1.2.3',
      '--runonce',
      '--runonce-timeout=45s',
      '-v',
      '4',
      '--logging-format=text',
      '--kubeconfig=/etc/kubernetes/kubelet.conf',
      '--kube-api-qps=20',
      '--kube-api-burst',
      '40',
      '--event-qps=7',
      '--event-burst=9',
      '--register-node=false',
      '--register-with-taints=dedicated=infra:NoSchedule,example.com/gpu:NoExecute',
      '--node-labels',
      'role=edge,example.com/team=a',
    ]);
    assert.equal(config.staticPodPath, '/srv/manifests');
    assert.equal(config.staticPodURL, 'http://example.test/pods');
    assert.deepEqual(config.staticPodURLHeader, { Authorization: ['Bearer t'] });
    assert.equal(config.syncFrequencyMs, 15_000);
    assert.equal(config.fileCheckFrequencyMs, 2_000);
    assert.equal(config.httpCheckFrequencyMs, 60_000);
    assert.equal(config.nodeStatusUpdateFrequencyMs, 3_000);
    assert.equal(config.runtimeRequestTimeoutMs, 30_000);
    assert.equal(config.containerRuntimeEndpoint, 'unix:///run/c.sock');
    assert.equal(config.maxPods, 7);
    assert.equal(config.healthzPort, 0);
    assert.equal(config.healthzBindAddress, '0.0.0.0');
    assert.equal(config.address, '127.0.0.1');
    assert.equal(config.port, 10260);
    assert.equal(config.readOnlyPort, 10265);
    assert.equal(config.rootDir, '/tmp/kubelet-root');
    assert.equal(config.nodeName, 'worker-1');
    assert.equal(config.nodeIP, '10.1.2.3');
    assert.equal(config.runOnce, true);
    assert.equal(config.runOnceTimeoutMs, 45_000);
    assert.equal(config.verbosity, 4);
    assert.equal(config.logFormat, 'text');
    assert.equal(config.kubeconfig, '/etc/kubernetes/kubelet.conf');
    assert.equal(config.kubeAPIQPS, 20);
    assert.equal(config.kubeAPIBurst, 40);
    assert.equal(config.eventRecordQPS, 7);
    assert.equal(config.eventBurst, 9);
    assert.equal(config.registerNode, false);
    assert.deepEqual(config.registerWithTaints, [
      { key: 'dedicated', value: 'infra', effect: 'NoSchedule' },
      { key: 'example.com/gpu', effect: 'NoExecute' },
    ]);
    assert.deepEqual(config.nodeLabels, { role: 'edge', 'example.com/team': 'a' });
  });

  it('lets given flags override the --config file', async () => {
    const { config } = await parse([
      `--config=${configFile}`,
      '--max-pods=3',
      '--sync-frequency=2s',
      '--container-runtime-endpoint=unix:///run/flag.sock',
      '--manifest-url-header=X-Flag:1',
      '--kube-api-qps=0',
      '--register-node',
      '--register-with-taints=flag:NoExecute',
    ]);
    assert.equal(config.configFile, configFile);
    assert.equal(config.kubeAPIQPS, 5, "--kube-api-qps=0 is client-go's fallback, not the file's 25");
    assert.equal(config.eventBurst, 30);
    assert.equal(config.registerNode, true);
    assert.deepEqual(config.registerWithTaints, [{ key: 'flag', effect: 'NoExecute' }]);
    assert.equal(config.maxPods, 3);
    assert.equal(config.syncFrequencyMs, 2_000);
    assert.equal(config.containerRuntimeEndpoint, 'unix:///run/flag.sock');
    assert.deepEqual(config.staticPodURLHeader, { 'X-Flag': ['1'] });
  });

  it('does not let flags that were not given override the file with their defaults', async () => {
    const { config, warnings } = await parse(['--config', configFile]);
    assert.equal(config.staticPodPath, '/etc/kubernetes/manifests');
    assert.equal(config.syncFrequencyMs, 30_000);
    assert.equal(config.fileCheckFrequencyMs, 5_000);
    assert.equal(config.maxPods, 20);
    assert.equal(config.healthzPort, 10300);
    assert.equal(config.containerRuntimeEndpoint, 'unix:///run/file/containerd.sock');
    assert.deepEqual(config.staticPodURLHeader, { 'X-File': ['a'] });
    assert.equal(config.kubeAPIQPS, 25);
    assert.equal(config.eventBurst, 30);
    assert.equal(config.registerNode, false);
    assert.deepEqual(config.registerWithTaints, [{ key: 'file', value: 'v', effect: 'NoSchedule' }]);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /kernelMemcgNotification/);
  });

  it('treats an empty --config as no file, as upstream does', async () => {
    assert.equal((await parse(['--config='])).config.configFile, undefined);
  });

  it('propagates config file errors', async () => {
    await assert.rejects(parse([`--config=${path.join(dir, 'missing.yaml')}`]), (err: unknown) =>
      hasCode(err, 'NotFound'),
    );
  });

  it('accepts --runonce=false and --runonce=true in pflag style', async () => {
    assert.equal((await parse(['--runonce=false'])).config.runOnce, false);
    assert.equal((await parse(['--runonce=true'])).config.runOnce, true);
    await assertRejectsInvalid(['--runonce=maybe'], /--runonce/);
  });

  it('reads -v in every form klog users write it', async () => {
    for (const argv of [['-v', '3'], ['-v3'], ['-v=3'], ['--v=3'], ['--v', '3']]) {
      assert.equal((await parse(argv)).config.verbosity, 3, argv.join(' '));
    }
  });

  it("takes --vmodule as klog's pattern=N list, and rejects a malformed one naming the entry", async () => {
    assert.equal(
      (await parse(['--vmodule=pod-worker*=4,kubelet=5'])).config.vmodule,
      'pod-worker*=4,kubelet=5',
    );
    assert.equal((await parse([])).config.vmodule, '');
    await assertRejectsInvalid(['--vmodule=kubelet'], /--vmodule: "kubelet" is not pattern=N/);
  });

  it('takes --log-flush-frequency as a checked duration without a warning (every line is written at once)', async () => {
    const { config, warnings } = await parse(['--log-flush-frequency=2s']);
    assert.equal(config.logFlushFrequencyMs, 2_000);
    assert.deepEqual(warnings, []);
    assert.equal((await parse([])).config.logFlushFrequencyMs, 5_000);
    await assertRejectsInvalid(['--log-flush-frequency=0s'], /--log-flush-frequency/);
    await assertRejectsInvalid(['--log-flush-frequency=often'], /--log-flush-frequency/);
  });

  it('accepts --log-format as an alias of --logging-format, and rejects a conflict', async () => {
    assert.equal((await parse(['--log-format=text'])).config.logFormat, 'text');
    await assertRejectsInvalid(['--log-format=text', '--logging-format=json'], /conflicts/);
    await assertRejectsInvalid(['--log-format=xml'], /--log-format/);
  });

  it('accepts unimplemented upstream flags, with a warning each', async () => {
    const { config, warnings } = await parse([
      '--fail-swap-on=false',
      '--cgroups-per-qos=false',
      '--enforce-node-allocatable=',
      '--cgroup-driver',
      'cgroupfs',
      '--container-runtime=remote',
      '--pod-manifest-path=/m',
    ]);
    assert.equal(config.staticPodPath, '/m', 'flags after ignored ones are still parsed');
    const ignored = ['fail-swap-on', 'container-runtime'];
    assert.equal(config.cgroupsPerQOS, false, 'the cgroup flags among them are implemented now');
    assert.deepEqual(config.enforceNodeAllocatable, []);
    assert.deepEqual(
      [...warnings].sort(),
      ignored.map((f) => `flag --${f} is not implemented by tskubelet yet and is ignored`).sort(),
    );
  });

  it('rejects unknown flags, positional arguments and malformed numbers', async () => {
    await assertRejectsInvalid(['--no-such-flag'], /unknown option '--no-such-flag'/);
    await assertRejectsInvalid(['extra'], /too many arguments/);
    await assertRejectsInvalid(['--max-pods=abc'], /--max-pods.*not an integer/);
    await assertRejectsInvalid(['--healthz-port=1.5'], /--healthz-port.*not an integer/);
  });

  it('reports flag validation errors naming the flag', async () => {
    await assertRejectsInvalid(
      ['--sync-frequency=5'],
      /--sync-frequency: invalid duration "5": missing unit/,
    );
    await assertRejectsInvalid(['--node-ip=nope'], /--node-ip/);
    await assertRejectsInvalid(['--healthz-port=70000'], /--healthz-port: 70000/);
  });

  it("clears the file's taints with an empty --register-with-taints, as upstream", async () => {
    const { config } = await parse([`--config=${configFile}`, '--register-with-taints=']);
    assert.deepEqual(config.registerWithTaints, []);
  });

  it('keeps only the last --register-with-taints and merges repeated --node-labels, as upstream', async () => {
    const { config } = await parse([
      '--register-with-taints=a:NoSchedule',
      '--register-with-taints=b:NoExecute',
      '--node-labels=a=1,b=2',
      '--node-labels=b=3,c=4',
    ]);
    assert.deepEqual(config.registerWithTaints, [{ key: 'b', effect: 'NoExecute' }]);
    assert.deepEqual(config.nodeLabels, { a: '1', b: '3', c: '4' });
  });

  it('rejects malformed --register-with-taints, naming the flag', async () => {
    await assertRejectsInvalid(
      ['--register-with-taints=novalue'],
      /--register-with-taints.*malformed taint "novalue"/,
    );
    await assertRejectsInvalid(['--register-with-taints=a=b=c:NoSchedule'], /more than one "="/);
    await assertRejectsInvalid(['--register-with-taints=a:NoSchedule-'], /taint removal/);
    await assertRejectsInvalid(
      ['--register-with-taints=a=b:Never'],
      /--register-with-taints: taint "a=b:Never": effect "Never" is not one of/,
    );
    await assertRejectsInvalid(['--register-with-taints=a:NoSchedule,a:NoSchedule'], /duplicate taint/);
    await assertRejectsInvalid(['--register-with-taints=a:NoSchedule,'], /malformed taint ""/);
  });

  it('rejects restricted and malformed --node-labels, naming the flag', async () => {
    await assertRejectsInvalid(
      ['--node-labels=node-role.kubernetes.io/worker='],
      /--node-labels: "node-role\.kubernetes\.io\/worker" is in the kubernetes\.io or k8s\.io namespace/,
    );
    await assertRejectsInvalid(['--node-labels=a=b c'], /--node-labels: label "a=b c": value may only hold/);
    const { config } = await parse(['--node-labels=node.kubernetes.io/pool=blue,kubelet.kubernetes.io/x=']);
    assert.deepEqual(config.nodeLabels, { 'node.kubernetes.io/pool': 'blue', 'kubelet.kubernetes.io/x': '' });
  });

  it('no longer warns about the cluster-mode flags it now implements', async () => {
    const { warnings } = await parse([
      '--kube-api-qps=10',
      '--kube-api-burst=20',
      '--event-qps=1',
      '--event-burst=2',
      '--register-node=true',
      '--register-with-taints=',
      '--node-labels=',
    ]);
    assert.deepEqual(warnings, []);
  });

  it('rejects malformed numbers in the client limit flags', async () => {
    await assertRejectsInvalid(['--kube-api-qps=1.5'], /--kube-api-qps.*not an integer/);
    await assertRejectsInvalid(['--event-burst=lots'], /--event-burst.*not an integer/);
    await assertRejectsInvalid(['--event-qps=-1'], /--event-qps: -1 must not be a negative number/);
  });

  it('maps the image pull and node image flags, without warnings', async () => {
    const { config, warnings } = await parse([
      '--serialize-image-pulls=true',
      '--registry-qps=3',
      '--registry-burst',
      '6',
      '--node-status-max-images=-1',
    ]);
    assert.deepEqual(warnings, []);
    assert.equal(config.serializeImagePulls, true);
    assert.equal(config.maxParallelImagePulls, 1);
    assert.equal(config.registryPullQPS, 3);
    assert.equal(config.registryBurst, 6);
    assert.equal(config.nodeStatusMaxImages, -1);
    const off = (await parse(['--serialize-image-pulls=false'])).config;
    assert.equal(off.serializeImagePulls, false);
    assert.equal(off.maxParallelImagePulls, undefined, 'no limit, as upstream');
  });

  it('derives the node name from --hostname-override, lowercased', async () => {
    assert.equal((await parse(['--hostname-override', 'MiXeD.Example'])).config.nodeName, 'mixed.example');
  });

  it('is a commander command named run that hands the compiled config to onRun', async () => {
    const received: CompiledConfig[] = [];
    const run = buildRunCommand(async (r) => {
      received.push(r);
      return Promise.resolve();
    }, opts);
    assert.equal(run.name(), 'run');
    const program = new Command('tskubelet').exitOverride().addCommand(run);
    await program.parseAsync(['node', 'tskubelet', 'run', '--max-pods', '9']);
    assert.equal(received.length, 1);
    assert.equal(received[0]?.config.maxPods, 9);
  });
});

describe('map flags with keys that are Object.prototype names', () => {
  it('keeps __proto__ and constructor as keys instead of throwing (a TypeError) or dropping them', async () => {
    assert.deepEqual(
      Object.entries(parseManifestURLHeader('__proto__:x,constructor:y,constructor:z', undefined)),
      [
        ['__proto__', ['x']],
        ['constructor', ['y', 'z']],
      ],
    );
    const c = await parse(['--manifest-url-header=constructor:y', '--manifest-url-header=__proto__:x']);
    assert.deepEqual(Object.keys(c.config.staticPodURLHeader), ['constructor', '__proto__']);
    // Kept as a key, then refused by validation for what it is, naming the flag.
    await assert.rejects(parse(['--node-labels=__proto__=x']), /--node-labels/);
    await assert.rejects(
      parse(['--eviction-hard=__proto__<1']),
      /--eviction-hard: unsupported eviction signal __proto__/,
    );
  });

  it('keeps a __proto__ header of a config file as a header', () => {
    const decoded = decodeKubeletConfiguration(
      JSON.parse(
        '{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","staticPodURLHeader":{"__proto__":["x"]}}',
      ),
      '/c.yaml',
    );
    assert.deepEqual(Object.entries(decoded.raw.staticPodURLHeader ?? {}), [['__proto__', ['x']]]);
  });
});

describe('parseManifestURLHeader', () => {
  it('splits comma-separated key:value pairs at the first colon and trims both sides', () => {
    assert.deepEqual(parseManifestURLHeader(' a : hello ,b:again,c:http://x:8080', undefined), {
      a: ['hello'],
      b: ['again'],
      c: ['http://x:8080'],
    });
  });

  it('accumulates repeated names across pairs and repeated flags, in order', () => {
    const first = parseManifestURLHeader('a:hello,b:again,c:world', undefined);
    const second = parseManifestURLHeader('b:beautiful', first);
    assert.deepEqual(second, { a: ['hello'], b: ['again', 'beautiful'], c: ['world'] });
    assert.deepEqual(first.b, ['again'], 'the previous value is not mutated');
  });

  it('skips empty pairs and rejects a pair without a colon', () => {
    assert.deepEqual(parseManifestURLHeader('a:1,,', undefined), { a: ['1'] });
    assert.throws(() => parseManifestURLHeader('novalue', undefined), /expected key:value/);
  });

  it('is wired to the repeatable --manifest-url-header flag', async () => {
    const { config } = await parse([
      '--manifest-url-header',
      'a:hello,b:again,c:world',
      '--manifest-url-header=b:beautiful',
    ]);
    assert.deepEqual(config.staticPodURLHeader, { a: ['hello'], b: ['again', 'beautiful'], c: ['world'] });
  });
});

describe('parseRegisterWithTaints', () => {
  it('reads key=value:Effect and key:Effect, comma-separated', () => {
    assert.deepEqual(parseRegisterWithTaints('a=b:NoSchedule,example.com/c:NoExecute,d=:PreferNoSchedule'), [
      { key: 'a', value: 'b', effect: 'NoSchedule' },
      { key: 'example.com/c', effect: 'NoExecute' },
      { key: 'd', value: '', effect: 'PreferNoSchedule' },
    ]);
  });

  it('reads an empty value as no taints', () => {
    assert.deepEqual(parseRegisterWithTaints(''), []);
  });

  it('refuses a taint without an effect, a removal, extra "=" or ":" and empty entries', () => {
    assert.throws(() => parseRegisterWithTaints('a=b'), /malformed taint "a=b", expected key=value:Effect/);
    assert.throws(() => parseRegisterWithTaints('a:NoSchedule-'), /taint removal/);
    assert.throws(() => parseRegisterWithTaints('a=b=c:NoSchedule'), /more than one "="/);
    assert.throws(() => parseRegisterWithTaints('a:b:NoSchedule'), /malformed taint "a:b:NoSchedule"/);
    assert.throws(() => parseRegisterWithTaints('a:NoSchedule,,b:NoExecute'), /malformed taint ""/);
  });

  it("leaves key, value and effect checks to validation (the file's taints get the same)", () => {
    assert.deepEqual(parseRegisterWithTaints('Bad Key=v:Whenever'), [
      { key: 'Bad Key', value: 'v', effect: 'Whenever' },
    ]);
  });
});

describe('parseNodeLabels', () => {
  it('splits comma-separated pairs at the first "=", trimming both sides', () => {
    assert.deepEqual(parseNodeLabels(' a = 1 ,b=x=y,example.com/c=', undefined), {
      a: '1',
      b: 'x=y',
      'example.com/c': '',
    });
  });

  it('gives a key without "=" an empty value and skips empty pairs', () => {
    assert.deepEqual(parseNodeLabels('a,,b=2,', undefined), { a: '', b: '2' });
  });

  it('merges into the previous value without mutating it, later keys winning', () => {
    const first = parseNodeLabels('a=1,b=2', undefined);
    assert.deepEqual(parseNodeLabels('b=3', first), { a: '1', b: '3' });
    assert.deepEqual(first, { a: '1', b: '2' });
  });
});

describe('security flags', () => {
  it('reads --seccomp-default and accumulates repeated --allowed-unsafe-sysctls', async () => {
    const { config, warnings } = await parse([
      '--seccomp-default',
      '--allowed-unsafe-sysctls=kernel.msg*,net.core.somaxconn',
      '--allowed-unsafe-sysctls',
      'fs.mqueue.*',
    ]);
    assert.equal(config.seccompDefault, true);
    assert.deepEqual(config.allowedUnsafeSysctls, ['kernel.msg*', 'net.core.somaxconn', 'fs.mqueue.*']);
    assert.deepEqual(warnings, []);
  });

  it('refuses an unsafe sysctl that is not namespaced, naming the flag', async () => {
    await assertRejectsInvalid(
      ['--allowed-unsafe-sysctls=vm.swappiness'],
      /--allowed-unsafe-sysctls: the sysctl "vm\.swappiness" is not known to be namespaced/,
    );
  });
});

describe('pod cgroup flags', () => {
  it('maps the cgroup flags onto the config', async () => {
    const { config, warnings } = await parse([
      '--cgroups-per-qos=true',
      '--cgroup-root=/tskubelet',
      '--cgroup-driver=cgroupfs',
      '--pod-max-pids=4096',
      '--cpu-cfs-quota=false',
      '--cpu-cfs-quota-period=20ms',
      '--enforce-node-allocatable=pods',
    ]);
    assert.deepEqual(warnings, []);
    assert.equal(config.cgroupsPerQOS, true);
    assert.equal(config.cgroupRoot, '/tskubelet');
    assert.equal(config.cgroupDriver, 'cgroupfs');
    assert.equal(config.podPidsLimit, 4096);
    assert.equal(config.cpuCFSQuota, false);
    assert.equal(config.cpuCFSQuotaPeriodMs, 20);
    assert.deepEqual(config.enforceNodeAllocatable, ['pods']);
  });

  it('refuses an unknown --cgroup-driver and --cgroups-per-qos=false with the default enforcement', async () => {
    await assertRejectsInvalid(['--cgroup-driver=lxc'], /not a cgroup driver/);
    await assertRejectsInvalid(['--cgroups-per-qos=false'], /--enforce-node-allocatable/);
    await assertRejectsInvalid(['--pod-max-pids=many'], /--pod-max-pids.*not an integer/);
  });
});

describe('container GC flags', () => {
  it('maps the three flags, negative counts meaning no limit, each with upstream’s deprecation notice', async () => {
    const { config, warnings } = await parse([
      '--minimum-container-ttl-duration=2m30s',
      '--maximum-dead-containers-per-container',
      '-1',
      '--maximum-dead-containers=100',
    ]);
    assert.equal(config.minimumGCAgeMs, 150_000);
    assert.equal(config.maxPerPodContainerCount, -1);
    assert.equal(config.maxContainerCount, 100);
    assert.deepEqual(
      [...warnings].sort(),
      [
        'maximum-dead-containers',
        'maximum-dead-containers-per-container',
        'minimum-container-ttl-duration',
      ].map(
        (f) =>
          `Flag --${f} has been deprecated, Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.`,
      ),
    );
  });

  it('defaults to upstream’s 0s, 1 and -1 without warnings', async () => {
    const { config, warnings } = await parse([]);
    assert.deepEqual(
      [config.minimumGCAgeMs, config.maxPerPodContainerCount, config.maxContainerCount],
      [0, 1, -1],
    );
    assert.deepEqual(warnings, []);
  });

  it('refuses a negative minimum age (upstream NewContainerGC) and malformed counts, naming the flag', async () => {
    await assertRejectsInvalid(
      ['--minimum-container-ttl-duration=-1s'],
      /--minimum-container-ttl-duration.*negative/,
    );
    await assertRejectsInvalid(
      ['--maximum-dead-containers=many'],
      /--maximum-dead-containers.*not an integer/,
    );
  });

  it('are flags only: the config file has no such fields', () => {
    assert.throws(
      () =>
        decodeKubeletConfiguration(
          {
            apiVersion: 'kubelet.config.k8s.io/v1beta1',
            kind: 'KubeletConfiguration',
            maximumDeadContainers: 3,
          },
          '/etc/kubernetes/kubelet.yaml',
        ),
      /maximumDeadContainers/,
    );
  });
});

describe('cluster DNS flags', () => {
  it('reads --cluster-domain and accumulates repeated --cluster-dns, without warnings', async () => {
    const { config, warnings } = await parse([
      '--cluster-domain=cluster.local',
      '--cluster-dns=10.96.0.10,10.96.0.11',
      '--cluster-dns',
      'fd00::a',
    ]);
    assert.equal(config.clusterDomain, 'cluster.local');
    assert.deepEqual(config.clusterDNS, ['10.96.0.10', '10.96.0.11', 'fd00::a']);
    assert.deepEqual(warnings, []);
  });

  it('refuses a --cluster-dns value that is not an IP address', async () => {
    await assertRejectsInvalid(
      ['--cluster-dns=kube-dns'],
      /--cluster-dns: "kube-dns" is not a valid IP address/,
    );
  });
});
