import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  Metadata,
  Server,
  ServerCredentials,
  status as GrpcStatus,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { hasCode } from '../../util/errors.ts';
import { createCriClient, criPackageDefinition, grpcTarget, type CriClient } from './client.ts';
import { CriError, errorCodeForGrpc, isCriNotFound } from './errors.ts';
import { callErrorCode } from './h2-invoker.ts';

/**
 * A fake runtime: a real gRPC server on a unix socket serving the same api.proto, with
 * handlers the tests set per method. Only what a test sets exists; other methods answer
 * UNIMPLEMENTED as a real server would.
 */
type Handler = (
  request: Record<string, unknown>,
) => { error: { code: number; details: string } } | object | 'hang';

interface FakeRuntime {
  endpoint: string;
  handlers: Map<string, Handler>;
  /** Requests received, by method name, as decoded by the server. */
  received: Map<string, Record<string, unknown>[]>;
  stop(): Promise<void>;
}

async function startFakeRuntime(dir: string): Promise<FakeRuntime> {
  const handlers = new Map<string, Handler>();
  const received = new Map<string, Record<string, unknown>[]>();
  const hanging: sendUnaryData<object>[] = [];
  const server = new Server();
  const def = criPackageDefinition();
  for (const service of ['RuntimeService', 'ImageService']) {
    const svc = def[`runtime.v1.${service}`] as ServiceDefinition;
    const impl: UntypedServiceImplementation = {};
    for (const method of Object.keys(svc)) {
      impl[method] = (call: ServerUnaryCall<Record<string, unknown>, object>, cb: sendUnaryData<object>) => {
        received.set(method, [...(received.get(method) ?? []), call.request]);
        const handler = handlers.get(method);
        if (!handler) {
          cb({
            code: GrpcStatus.UNIMPLEMENTED,
            details: `fake: ${method} not set`,
            metadata: new Metadata(),
          });
          return;
        }
        const out = handler(call.request);
        if (out === 'hang') {
          hanging.push(cb);
          return;
        }
        if ('error' in out) {
          cb({ ...out.error, metadata: new Metadata() });
          return;
        }
        cb(null, out);
      };
    }
    server.addService(svc, impl);
  }
  const socket = path.join(dir, 'fake-cri.sock');
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  return {
    endpoint: `unix://${socket}`,
    handlers,
    received,
    stop: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
}

function grpcError(code: number, details: string) {
  return { error: { code, details } };
}

async function rejection(p: Promise<unknown>): Promise<CriError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof CriError, `expected CriError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to reject');
}

void describe('CRI client against a fake runtime', () => {
  let dir: string;
  let fake: FakeRuntime;
  let cri: CriClient;

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cri-client-test-'));
    fake = await startFakeRuntime(dir);
    cri = createCriClient({ endpoint: fake.endpoint, timeoutMs: 5_000 });
  });

  after(async () => {
    cri.close();
    await fake.stop();
    await rm(dir, { recursive: true, force: true });
  });

  void test('maps NOT_FOUND to NotFound, keeping the runtime details and the operation', async () => {
    fake.handlers.set('ContainerStatus', () =>
      grpcError(GrpcStatus.NOT_FOUND, 'container "abc" in namespace: not found'),
    );
    const err = await rejection(cri.runtime.containerStatus('abc'));
    assert.equal(err.code, 'NotFound');
    assert.equal(err.grpcCode, GrpcStatus.NOT_FOUND);
    assert.equal(err.op, 'CRI ContainerStatus');
    assert.match(err.message, /^CRI ContainerStatus: container "abc" in namespace: not found$/);
    assert.ok(isCriNotFound(err));
  });

  void test('keeps UNKNOWN as Unknown but isCriNotFound recognises a "not found" message', async () => {
    fake.handlers.set('StopContainer', () =>
      grpcError(GrpcStatus.UNKNOWN, 'failed to stop container "x": not found'),
    );
    const err = await rejection(cri.runtime.stopContainer('x', 10));
    assert.equal(err.code, 'Unknown');
    assert.ok(isCriNotFound(err));

    fake.handlers.set('StopContainer', () => grpcError(GrpcStatus.UNKNOWN, 'shim exited'));
    assert.equal(isCriNotFound(await rejection(cri.runtime.stopContainer('x', 10))), false);
  });

  void test('a call past its deadline rejects with DeadlineExceeded', async () => {
    fake.handlers.set('ListContainers', () => 'hang');
    const err = await rejection(cri.runtime.listContainers(undefined, { timeoutMs: 20 }));
    assert.equal(err.code, 'DeadlineExceeded');
    assert.ok(hasCode(err, 'DeadlineExceeded'));
  });

  void test('an UNKNOWN "context deadline exceeded" from the runtime past the deadline is DeadlineExceeded', () => {
    const ranOut = {
      code: GrpcStatus.UNKNOWN,
      details: 'failed to exec in container: failed to create exec "c1": context deadline exceeded: unknown',
    };
    assert.equal(callErrorCode(ranOut, 1_000, 1_001), GrpcStatus.DEADLINE_EXCEEDED);
    // Before the deadline it is the runtime's own deadline (an internal call), not the caller's.
    assert.equal(callErrorCode(ranOut, 1_000, 999), GrpcStatus.UNKNOWN);
    // Another failure past the deadline keeps its code.
    assert.equal(
      callErrorCode({ code: GrpcStatus.UNKNOWN, details: 'shim exited' }, 1_000, 2_000),
      GrpcStatus.UNKNOWN,
    );
    assert.equal(
      callErrorCode({ code: GrpcStatus.NOT_FOUND, details: 'no such' }, 1_000, 2_000),
      GrpcStatus.NOT_FOUND,
    );
  });

  void test('aborting the signal cancels a call in flight with Canceled', async () => {
    fake.handlers.set('ListPodSandbox', () => 'hang');
    const ac = new AbortController();
    const p = cri.runtime.listPodSandbox(undefined, { signal: ac.signal });
    // Abort once the server has the request, so the cancel really crosses the wire.
    while ((fake.received.get('ListPodSandbox') ?? []).length === 0)
      await new Promise((r) => setImmediate(r));
    ac.abort(new Error('pod deleted'));
    const err = await rejection(p);
    assert.equal(err.code, 'Canceled');
    assert.match(err.message, /pod deleted/);
  });

  void test('an already aborted signal rejects without reaching the runtime', async () => {
    const before = (fake.received.get('RemoveContainer') ?? []).length;
    const err = await rejection(cri.runtime.removeContainer('c1', { signal: AbortSignal.abort() }));
    assert.equal(err.code, 'Canceled');
    assert.equal((fake.received.get('RemoveContainer') ?? []).length, before);
  });

  void test('decodes enums as names, maps as objects, int64 as numbers and drops absent messages', async () => {
    fake.handlers.set('PodSandboxStatus', () => ({
      status: {
        id: 'sb1',
        metadata: { name: 'web', uid: 'u1', namespace: 'default', attempt: 2 },
        state: 'SANDBOX_NOTREADY',
        createdAt: 1_700_000_000_123_456_768, // exactly representable as a double
        labels: { app: 'web' },
      },
    }));
    const s = await cri.runtime.podSandboxStatus('sb1');
    assert.equal(s.state, 'SANDBOX_NOTREADY');
    assert.deepEqual(s.labels, { app: 'web' });
    assert.deepEqual(s.annotations, {});
    assert.equal(typeof s.createdAt, 'number');
    assert.equal(s.createdAt, 1_700_000_000_123_456_768);
    assert.equal(s.metadata.attempt, 2);
    assert.equal('network' in s, false, 'an absent message field is missing, not null');
    assert.deepEqual(fake.received.get('PodSandboxStatus')?.at(-1), { podSandboxId: 'sb1', verbose: false });
  });

  void test('ContainerStatus verbose sends verbose and returns the info map (crictl inspect)', async () => {
    fake.handlers.set('ContainerStatus', () => ({
      status: { id: 'c1', metadata: { name: 'app', attempt: 0 }, state: 'CONTAINER_RUNNING', createdAt: 1 },
      info: { info: '{"pid":42}' },
    }));
    const s = await cri.runtime.containerStatus('c1', { verbose: true });
    assert.deepEqual(s.info, { info: '{"pid":42}' });
    assert.deepEqual(fake.received.get('ContainerStatus')?.at(-1), { containerId: 'c1', verbose: true });
    const plain = await cri.runtime.containerStatus('c1');
    assert.equal('info' in plain, false, 'no info unless asked');
  });

  void test('sends filters, label selectors and enum names the runtime can decode', async () => {
    fake.handlers.set('ListContainers', () => ({
      containers: [
        { id: 'c1', podSandboxId: 'sb1', state: 'CONTAINER_EXITED', metadata: { name: 'app', attempt: 0 } },
      ],
    }));
    const list = await cri.runtime.listContainers({
      state: { state: 'CONTAINER_RUNNING' },
      labelSelector: { 'io.kubernetes.pod.uid': 'u1' },
    });
    assert.equal(list.length, 1);
    assert.equal(list[0]?.state, 'CONTAINER_EXITED');
    const req = fake.received.get('ListContainers')?.at(-1) as { filter: Record<string, unknown> };
    assert.deepEqual(req.filter.state, { state: 'CONTAINER_RUNNING' });
    assert.deepEqual(req.filter.labelSelector, { 'io.kubernetes.pod.uid': 'u1' });
  });

  void test("sends a container's hugetlb limits as CRI hugepage_limits", async () => {
    fake.handlers.set('CreateContainer', () => ({ containerId: 'c1' }));
    await cri.runtime.createContainer(
      'sb1',
      {
        metadata: { name: 'app', attempt: 0 },
        image: { image: 'sha256:feed' },
        linux: {
          resources: {
            hugepageLimits: [
              { pageSize: '1GB', limit: 0 },
              { pageSize: '2MB', limit: 8 * 2 ** 20 },
            ],
          },
        },
      },
      { metadata: { name: 'p', uid: 'u1', namespace: 'default', attempt: 0 } },
    );
    const req = fake.received.get('CreateContainer')?.at(-1) as {
      config: { linux: { resources: { hugepageLimits: unknown } } };
    };
    assert.deepEqual(req.config.linux.resources.hugepageLimits, [
      { pageSize: '1GB', limit: 0 },
      { pageSize: '2MB', limit: 8 * 2 ** 20 },
    ]);
  });

  void test("sends a container's block-volume devices as CRI ContainerConfig.devices", async () => {
    fake.handlers.set('CreateContainer', () => ({ containerId: 'c1' }));
    const devices = [
      {
        containerPath: '/dev/xvda',
        hostPath: '/var/lib/kubelet/pods/u1/volumeDevices/x/pv',
        permissions: 'mrw',
      },
    ];
    await cri.runtime.createContainer(
      'sb1',
      { metadata: { name: 'app', attempt: 0 }, image: { image: 'sha256:feed' }, devices },
      { metadata: { name: 'p', uid: 'u1', namespace: 'default', attempt: 0 } },
    );
    const req = fake.received.get('CreateContainer')?.at(-1) as { config: { devices: unknown } };
    assert.deepEqual(req.config.devices, devices);
  });

  void test('execSync returns stdout and stderr as Buffers with the exit code', async () => {
    fake.handlers.set('ExecSync', () => ({
      stdout: Buffer.from('hi\n'),
      stderr: Buffer.from('warn'),
      exitCode: 3,
    }));
    const r = await cri.runtime.execSync('c1', ['sh', '-c', 'echo hi'], 5);
    assert.ok(Buffer.isBuffer(r.stdout));
    assert.equal(r.stdout.toString(), 'hi\n');
    assert.equal(r.stderr.toString(), 'warn');
    assert.equal(r.exitCode, 3);
    assert.deepEqual(fake.received.get('ExecSync')?.at(-1), {
      containerId: 'c1',
      cmd: ['sh', '-c', 'echo hi'],
      timeout: 5,
    });
  });

  void test('imageStatus is null when the runtime has no such image', async () => {
    fake.handlers.set('ImageStatus', (req) =>
      (req.image as { image: string }).image === 'present:1'
        ? { image: { id: 'sha256:aa', repoTags: ['present:1'], size: 1234 } }
        : {},
    );
    assert.equal(await cri.image.imageStatus({ image: 'missing:1' }), null);
    const img = await cri.image.imageStatus({ image: 'present:1' });
    assert.equal(img?.id, 'sha256:aa');
    assert.equal(img?.size, 1234);
    assert.deepEqual(img?.repoDigests, []);
  });

  void test('rejects responses that break the CRI contract', async () => {
    fake.handlers.set('RunPodSandbox', () => ({}));
    const err = await rejection(
      cri.runtime.runPodSandbox({ metadata: { name: 'p', uid: 'u', namespace: 'n', attempt: 0 } }),
    );
    assert.equal(err.op, 'CRI RunPodSandbox');
    assert.match(err.message, /empty pod sandbox id/);

    fake.handlers.set('ContainerStatus', () => ({}));
    assert.match((await rejection(cri.runtime.containerStatus('c9'))).message, /incomplete status/);
  });

  void test('a method the runtime does not implement rejects with Unimplemented', async () => {
    fake.handlers.delete('ImageFsInfo');
    assert.equal((await rejection(cri.image.imageFsInfo())).code, 'Unimplemented');
  });
});

void describe('CRI client without a runtime', () => {
  void test('a call to a socket nobody listens on rejects with Unavailable', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'cri-client-test-'));
    const cri = createCriClient({ endpoint: path.join(dir, 'nobody.sock'), timeoutMs: 5_000 });
    try {
      const err = await rejection(cri.runtime.version());
      assert.equal(err.code, 'Unavailable');
    } finally {
      cri.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  void test('a closed client rejects calls with Unavailable', async () => {
    const cri = createCriClient({ endpoint: 'unix:///nonexistent/cri.sock' });
    cri.close();
    const err = await rejection(cri.runtime.status());
    assert.equal(err.code, 'Unavailable');
    assert.match(err.message, /closed/);
  });
});

void describe('grpcTarget', () => {
  void test('accepts unix URLs and bare paths and rejects other schemes', () => {
    assert.equal(
      grpcTarget('unix:///run/containerd/containerd.sock'),
      'unix:///run/containerd/containerd.sock',
    );
    assert.equal(grpcTarget('/run/containerd/containerd.sock'), 'unix:///run/containerd/containerd.sock');
    assert.throws(() => grpcTarget('tcp://127.0.0.1:1234'), { code: 'InvalidArgument' });
  });
});

void describe('errorCodeForGrpc', () => {
  void test('maps every gRPC status code to a kubelet error code', () => {
    const want: Record<number, string> = {
      [GrpcStatus.CANCELLED]: 'Canceled',
      [GrpcStatus.UNKNOWN]: 'Unknown',
      [GrpcStatus.INVALID_ARGUMENT]: 'InvalidArgument',
      [GrpcStatus.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
      [GrpcStatus.NOT_FOUND]: 'NotFound',
      [GrpcStatus.ALREADY_EXISTS]: 'AlreadyExists',
      [GrpcStatus.PERMISSION_DENIED]: 'PermissionDenied',
      [GrpcStatus.RESOURCE_EXHAUSTED]: 'ResourceExhausted',
      [GrpcStatus.FAILED_PRECONDITION]: 'FailedPrecondition',
      [GrpcStatus.ABORTED]: 'Unavailable',
      [GrpcStatus.OUT_OF_RANGE]: 'InvalidArgument',
      [GrpcStatus.UNIMPLEMENTED]: 'Unimplemented',
      [GrpcStatus.INTERNAL]: 'Internal',
      [GrpcStatus.UNAVAILABLE]: 'Unavailable',
      [GrpcStatus.DATA_LOSS]: 'Internal',
      [GrpcStatus.UNAUTHENTICATED]: 'Unauthenticated',
      99: 'Unknown',
    };
    for (const [code, name] of Object.entries(want))
      assert.equal(errorCodeForGrpc(Number(code)), name, `code ${code}`);
  });

  void test('a CriError without details names the status instead', () => {
    const err = new CriError('CRI Version', GrpcStatus.UNAVAILABLE, '');
    assert.equal(err.message, 'CRI Version: UNAVAILABLE');
  });
});
