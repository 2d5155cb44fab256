import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import {
  Server,
  ServerCredentials,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { grpcProbe, healthPackageDefinition } from './grpc-probe.ts';
import { runProbe } from './run-probe.ts';

async function startServer(withHealth: boolean, statuses: Record<string, string>) {
  const server = new Server();
  const seen: { service: string; userAgent: string }[] = [];
  if (withHealth) {
    const svc = healthPackageDefinition()['grpc.health.v1.Health'] as ServiceDefinition;
    server.addService(svc, {
      Check: (call: ServerUnaryCall<{ service: string }, object>, cb: sendUnaryData<object>) => {
        seen.push({ service: call.request.service, userAgent: String(call.metadata.get('user-agent')[0]) });
        const status = statuses[call.request.service] ?? 'SERVICE_UNKNOWN';
        if (status !== 'hang') cb(null, { status });
      },
    });
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { server, port, seen };
}

describe('grpc probe', () => {
  let health: Awaited<ReturnType<typeof startServer>>;
  let bare: Awaited<ReturnType<typeof startServer>>;
  before(async () => {
    health = await startServer(true, { '': 'SERVING', db: 'NOT_SERVING', slow: 'hang' });
    bare = await startServer(false, {});
  });
  after(() => {
    health.server.forceShutdown();
    bare.server.forceShutdown();
  });

  it('succeeds when the service answers SERVING, calling Check with the service name and kube-probe agent', async () => {
    assert.deepEqual(await grpcProbe('127.0.0.1', health.port, '', 1_000), {
      result: 'success',
      output: 'service healthy',
    });
    assert.equal(health.seen.at(-1)?.service, '');
    assert.match(health.seen.at(-1)?.userAgent ?? '', /^kube-probe\/1\.20/);
  });

  it('fails when the service is not SERVING', async () => {
    assert.deepEqual(await grpcProbe('127.0.0.1', health.port, 'db', 1_000), {
      result: 'failure',
      output: 'service unhealthy (responded with "NOT_SERVING")',
    });
    assert.equal(health.seen.at(-1)?.service, 'db');
  });

  it('fails when the server does not implement the health protocol', async () => {
    const out = await grpcProbe('127.0.0.1', bare.port, '', 1_000);
    assert.equal(out.result, 'failure');
    assert.match(
      out.output,
      /^error: this server does not implement the grpc health protocol \(grpc\.health\.v1\.Health\)/,
    );
  });

  it('fails when the check does not answer within the timeout', async () => {
    assert.deepEqual(await grpcProbe('127.0.0.1', health.port, 'slow', 300), {
      result: 'failure',
      output: 'timeout: health rpc did not complete within 0.3s',
    });
  });

  it('fails when nothing listens within the timeout', async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const free = (s.address() as AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    const out = await grpcProbe('127.0.0.1', free, '', 300);
    assert.equal(out.result, 'failure');
    assert.equal(
      out.output,
      `timeout: failed to connect service "127.0.0.1:${free}" within 0.3s: context deadline exceeded`,
    );
  });

  it('throws when its caller aborts it', async () => {
    const ctl = new AbortController();
    const p = grpcProbe('127.0.0.1', health.port, 'slow', 10_000, ctl.signal);
    ctl.abort(new Error('stopped'));
    await assert.rejects(p, /stopped/);
  });

  it('probes the pod IP through runProbe', async () => {
    const out = await runProbe(
      { grpc: { port: health.port }, timeoutSeconds: 1 },
      {
        container: { name: 'c' },
        containerId: 'c1',
        podIP: '127.0.0.1',
        exec: () => Promise.reject(new Error('unused')),
      },
    );
    assert.deepEqual(out, { result: 'success', output: 'service healthy' });
  });
});
