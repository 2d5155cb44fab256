import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { describeError } from '../../src/util/errors.ts';
import {
  createCriClient,
  isCriNotFound,
  runtimeCgroupDriver,
  type ContainerConfig,
  type CriClient,
  type PodSandboxConfig,
} from '../../src/runtime/cri/index.ts';
import { BUSYBOX_IMAGE, removeAllPods, startContainerd, type ContainerdBed } from '../harness/index.ts';

/**
 * The CRI client against the bed's real containerd: proves the field numbers in api.proto by
 * round-tripping a whole pod lifecycle (a wrong number would lose or garble a field silently).
 */
void describe('CRI client against containerd', () => {
  let bed: ContainerdBed | undefined;
  let cri: CriClient;
  let logDir = '';
  const uid = `cri-client-${process.pid}-${Date.now()}`;
  const sandboxConfig = (): PodSandboxConfig => ({
    metadata: { name: 'cri-client-test', uid, namespace: 'default', attempt: 0 },
    hostname: 'cri-client-test',
    logDirectory: logDir,
    labels: {
      'io.kubernetes.pod.uid': uid,
      'io.kubernetes.pod.name': 'cri-client-test',
      suite: 'cri-client',
    },
    annotations: { 'tskubelet.test/annotation': 'kept as is' },
    dnsConfig: { servers: ['10.96.0.10'], searches: ['default.svc.cluster.local'], options: ['ndots:5'] },
    linux: {
      cgroupParent: '',
      securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
    },
  });

  before(async () => {
    bed = await startContainerd();
    await removeAllPods(bed);
    logDir = await mkdtemp(path.join(tmpdir(), 'cri-client-logs-'));
    cri = createCriClient({ endpoint: bed.endpoint });
  });

  after(async () => {
    // Remove whatever a failed test left behind, then release the bed; report every failure.
    // Each step is guarded: `before` may have failed half-way.
    const problems: string[] = [];
    if (bed) {
      await removeAllPods(bed).catch((err: unknown) => problems.push(`remove pods: ${describeError(err)}`));
    }
    // `cri` is unset when `before` failed early.
    (cri as CriClient | undefined)?.close();
    if (logDir) {
      await rm(logDir, { recursive: true, force: true }).catch((err: unknown) =>
        problems.push(`remove log dir: ${describeError(err)}`),
      );
    }
    await bed?.stop();
    assert.deepEqual(problems, []);
  });

  void it('reports version v1 of the runtime API', async () => {
    const v = await cri.runtime.version();
    assert.equal(v.runtimeName, 'containerd');
    assert.equal(v.runtimeApiVersion, 'v1');
    assert.match(v.runtimeVersion, /^v?\d+\.\d+/);
  });

  void it('reports RuntimeReady and NetworkReady', async () => {
    const { conditions } = await cri.runtime.status();
    const byType = new Map(conditions.map((c) => [c.type, c]));
    assert.equal(byType.get('RuntimeReady')?.status, true);
    assert.equal(byType.get('NetworkReady')?.status, true, JSON.stringify(byType.get('NetworkReady')));
  });

  void it("tells the runtime's cgroup driver from its verbose Status (the bed's containerd: cgroupfs)", async () => {
    const status = await cri.runtime.status({ verbose: true });
    assert.ok(
      status.info?.['config'],
      `no config in the verbose Status info: ${Object.keys(status.info ?? {}).join(', ')}`,
    );
    assert.equal(await runtimeCgroupDriver(cri.runtime), 'cgroupfs');
  });

  void it('finds the imported busybox image and returns null for a missing one', async () => {
    const img = await cri.image.imageStatus({ image: BUSYBOX_IMAGE });
    assert.ok(img, 'busybox image present');
    assert.match(img.id, /^sha256:[0-9a-f]{64}$/);
    assert.ok(img.repoTags.includes(BUSYBOX_IMAGE), img.repoTags.join(','));
    assert.ok(img.size > 0);
    assert.equal(await cri.image.imageStatus({ image: 'docker.io/library/no-such-image:0.0.1' }), null);

    const listed = await cri.image.listImages();
    assert.ok(listed.some((i) => i.id === img.id));
    const fs = await cri.image.imageFsInfo();
    assert.ok(fs.length > 0 && (fs[0]?.fsId?.mountpoint ?? '') !== '', JSON.stringify(fs));
  });

  void it('runs a pod through its whole life: sandbox, container, exec, stop, remove', async () => {
    const config = sandboxConfig();
    const dataDir = path.join(logDir, 'data');
    await mkdir(dataDir);
    await writeFile(path.join(dataDir, 'hello.txt'), 'from the host\n');
    const sandboxId = await cri.runtime.runPodSandbox(config);
    try {
      const sb = await cri.runtime.podSandboxStatus(sandboxId);
      assert.equal(sb.id, sandboxId);
      assert.equal(sb.state, 'SANDBOX_READY');
      assert.deepEqual(sb.metadata, config.metadata);
      assert.equal(sb.labels.suite, 'cri-client');
      assert.equal(sb.annotations['tskubelet.test/annotation'], 'kept as is');
      assert.match(sb.network?.ip ?? '', /^\d+\.\d+\.\d+\.\d+$/, 'the CNI gave the sandbox an IP');
      assert.ok(sb.createdAt > 1e18, `createdAt ${sb.createdAt} is Unix nanoseconds`);

      const listedSandboxes = await cri.runtime.listPodSandbox({
        labelSelector: { 'io.kubernetes.pod.uid': uid },
      });
      assert.deepEqual(
        listedSandboxes.map((s) => s.id),
        [sandboxId],
      );

      const containerConfig: ContainerConfig = {
        metadata: { name: 'app', attempt: 0 },
        image: { image: BUSYBOX_IMAGE },
        command: ['sh', '-c', 'echo hello; sleep 3600'],
        envs: [{ key: 'GREETING', value: 'hello' }],
        labels: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'app' },
        annotations: { 'io.kubernetes.container.restartCount': '0' },
        mounts: [{ containerPath: '/data', hostPath: dataDir, readonly: true }],
        logPath: 'app/0.log',
        linux: {
          securityContext: {
            namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' },
            runAsUser: { value: 65534 },
          },
        },
      };
      const containerId = await cri.runtime.createContainer(sandboxId, containerConfig, config);
      await cri.runtime.startContainer(containerId);

      const listed = await cri.runtime.listContainers({
        labelSelector: { 'io.kubernetes.pod.uid': uid, 'io.kubernetes.container.name': 'app' },
      });
      assert.deepEqual(
        listed.map((c) => [c.id, c.podSandboxId, c.metadata.name]),
        [[containerId, sandboxId, 'app']],
      );
      const running = await cri.runtime.listContainers({
        podSandboxId: sandboxId,
        state: { state: 'CONTAINER_RUNNING' },
      });
      assert.deepEqual(
        running.map((c) => c.id),
        [containerId],
      );

      const st = await cri.runtime.containerStatus(containerId);
      assert.equal(st.state, 'CONTAINER_RUNNING');
      assert.ok(st.startedAt > 0);
      assert.equal(st.finishedAt, 0);
      assert.equal(st.metadata.name, 'app');
      // containerd reports one of the image's tags; the same content may carry several (the image-pull
      // tests push it to a local registry under another name), so check by image ID.
      const busybox = await cri.image.imageStatus({ image: BUSYBOX_IMAGE });
      assert.ok(
        busybox?.repoTags.includes(st.image.image),
        `${st.image.image} is a tag of the busybox image`,
      );
      assert.match(st.imageRef, /sha256:[0-9a-f]{64}/);
      assert.ok(
        st.imageRef === busybox?.id || busybox?.repoDigests.includes(st.imageRef),
        `${st.imageRef} names the busybox image`,
      );
      assert.equal(st.annotations['io.kubernetes.container.restartCount'], '0');
      assert.equal(st.logPath, path.join(logDir, 'app/0.log'));

      const exec = await cri.runtime.execSync(containerId, ['sh', '-c', 'echo hi; echo "$GREETING" >&2'], 10);
      assert.equal(exec.stdout.toString(), 'hi\n');
      assert.equal(exec.stderr.toString(), 'hello\n');
      assert.equal(exec.exitCode, 0);
      const failing = await cri.runtime.execSync(containerId, ['sh', '-c', 'exit 7'], 10);
      assert.equal(failing.exitCode, 7);

      // Fields that only show inside the container: hostname and DNS (sandbox config), the
      // user and a read-only mount (container config).
      const inside = await cri.runtime.execSync(
        containerId,
        ['sh', '-c', 'hostname; id -u; cat /data/hello.txt; grep nameserver /etc/resolv.conf; touch /data/x'],
        10,
      );
      assert.equal(
        inside.stdout.toString(),
        'cri-client-test\n65534\nfrom the host\nnameserver 10.96.0.10\n',
        inside.stderr.toString(),
      );
      assert.notEqual(inside.exitCode, 0, 'the read-only mount refuses writes');

      // A 1 ms deadline on a command that cannot answer sooner than 5 s: no race with a fast
      // runtime (a quick call like ListContainers often beats 1 ms on this socket).
      await assert.rejects(cri.runtime.execSync(containerId, ['sleep', '5'], 10, { timeoutMs: 1 }), {
        code: 'DeadlineExceeded',
      });

      // sh ignores SIGTERM as PID 1, so the grace period runs out and the runtime kills it.
      await cri.runtime.stopContainer(containerId, 1);
      const exited = await cri.runtime.containerStatus(containerId);
      assert.equal(exited.state, 'CONTAINER_EXITED');
      assert.ok(exited.finishedAt >= exited.startedAt);
      assert.equal(exited.exitCode, 137, `exit code ${exited.exitCode}, reason ${exited.reason}`);

      const log = await readFile(path.join(logDir, 'app/0.log'), 'utf8');
      assert.match(log, /stdout F hello\n/, 'CRI log format: <time> <stream> <tag> <line>');

      await cri.runtime.removeContainer(containerId);
      const gone = await cri.runtime.containerStatus(containerId).then(
        () => assert.fail('status of a removed container must reject'),
        (err: unknown) => err,
      );
      assert.ok(isCriNotFound(gone), describeError(gone));
    } finally {
      await cri.runtime.stopPodSandbox(sandboxId);
      await cri.runtime.removePodSandbox(sandboxId);
    }
    assert.deepEqual(await cri.runtime.listPodSandbox({ id: sandboxId }), []);
    const sandboxGone = await cri.runtime.podSandboxStatus(sandboxId).then(
      () => assert.fail('status of a removed sandbox must reject'),
      (err: unknown) => err,
    );
    assert.ok(isCriNotFound(sandboxGone), describeError(sandboxGone));
  });
});
