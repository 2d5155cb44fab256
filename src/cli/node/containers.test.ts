import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { Container, ContainerFilter, ContainerStats } from '../../runtime/cri/index.ts';
import { CriError } from '../../runtime/cri/index.ts';
import { createApiHandlers } from '../../server/api-handlers.ts';
import type { CriReadHost } from '../../server/cri-read.ts';
import { createLocalSocketServer, type LocalSocketServer } from '../../server/local-socket.ts';
import { fakeHost } from '../../server/testing.ts';
import { nullLogger } from '../../util/logger.ts';
import { connectNode, type NodeClient } from './client.ts';
import { runImages, runInspect, runPs, runStats } from './containers.ts';
import type { CommandIO } from './get-pods.ts';

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}
const NOW = Date.parse('2026-11-28T12:00:00Z');
function io(): CommandIO & { out: Capture; err: Capture } {
  return { out: new Capture(), err: new Capture(), signal: new AbortController().signal, now: () => NOW };
}

const running: Container = {
  id: `run${'1'.repeat(61)}`,
  podSandboxId: 's'.repeat(64),
  metadata: { name: 'web', attempt: 2 },
  image: { image: 'docker.io/library/nginx:1.25' },
  imageRef: '',
  state: 'CONTAINER_RUNNING',
  createdAt: (NOW - 30_000) * 1e6,
  labels: { 'io.kubernetes.pod.name': 'nginx', 'io.kubernetes.pod.namespace': 'default' },
  annotations: {},
};
const exited: Container = {
  ...running,
  id: `exi${'2'.repeat(61)}`,
  state: 'CONTAINER_EXITED',
  createdAt: (NOW - 60_000) * 1e6,
};

/** A fake CRI answering the read-only calls, recording the filters it was given. */
function fakeCri(filters: (ContainerFilter | undefined)[]): CriReadHost {
  let sample = 0;
  return {
    runtime: {
      listContainers: (filter) => {
        filters.push(filter);
        const all = [running, exited];
        return Promise.resolve(filter?.state ? all.filter((c) => c.state === filter.state?.state) : all);
      },
      containerStatus: (id, opts) => {
        if (!running.id.startsWith(id)) {
          return Promise.reject(new CriError('CRI ContainerStatus', 5, `container "${id}" does not exist`));
        }
        assert.equal(opts?.verbose, true, 'inspect asks for the verbose status');
        return Promise.resolve({
          id: running.id,
          metadata: running.metadata,
          state: running.state,
          createdAt: running.createdAt,
          startedAt: running.createdAt,
          finishedAt: 0,
          exitCode: 0,
          image: running.image,
          imageRef: 'docker.io/library/nginx@sha256:abc',
          reason: '',
          message: '',
          labels: {},
          annotations: {},
          mounts: [],
          logPath: '/var/log/pods/p/web/2.log',
          info: { info: '{"pid":42}' },
        });
      },
      listContainerStats: () => {
        sample++;
        const s: ContainerStats = {
          attributes: { id: running.id, metadata: running.metadata, labels: {}, annotations: {} },
          cpu: { timestamp: sample * 1e9, usageCoreNanoSeconds: { value: sample * 5e8 } },
          memory: { timestamp: sample * 1e9, workingSetBytes: { value: 2_000_000 } },
          writableLayer: { timestamp: sample * 1e9, usedBytes: { value: 8_192 }, inodesUsed: { value: 2 } },
        };
        return Promise.resolve([s]);
      },
    },
    images: {
      listImages: () =>
        Promise.resolve([
          {
            id: `sha256:${'9'.repeat(64)}`,
            repoTags: ['docker.io/library/nginx:1.25'],
            repoDigests: [],
            size: 70_000_000,
            username: '',
          },
        ]),
    },
  };
}

function handlers() {
  return createApiHandlers({
    host: fakeHost([]),
    enableDebuggingHandlers: true,
    enableSystemLogHandler: false,
    streamingIdleTimeoutMs: 1000,
    logger: nullLogger,
  });
}

function send(socketPath: string, path: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

let dir: string;
let withCri: LocalSocketServer;
let withoutCri: LocalSocketServer;
let client: NodeClient;
const filters: (ContainerFilter | undefined)[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-cri-'));
  withCri = createLocalSocketServer({
    path: join(dir, 'a.sock'),
    handlers: handlers(),
    logger: nullLogger,
    cri: fakeCri(filters),
  });
  withoutCri = createLocalSocketServer({
    path: join(dir, 'b.sock'),
    handlers: handlers(),
    logger: nullLogger,
  });
  await withCri.start();
  await withoutCri.start();
  client = await connectNode({ socket: join(dir, 'a.sock') });
});
after(async () => {
  await withCri.close();
  await withoutCri.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the local socket CRI views', () => {
  it('lists only running containers unless all=true, as crictl ps filters', async () => {
    filters.length = 0;
    const r = JSON.parse((await send(join(dir, 'a.sock'), '/cri/containers')).body) as {
      containers: Container[];
    };
    assert.deepEqual(
      r.containers.map((c) => c.id),
      [running.id],
    );
    await send(join(dir, 'a.sock'), '/cri/containers?all=true&podSandboxId=abc');
    assert.deepEqual(filters, [{ state: { state: 'CONTAINER_RUNNING' } }, { podSandboxId: 'abc' }]);
  });
  it('refuses anything but GET: the views are read-only', async () => {
    const r = await send(join(dir, 'a.sock'), '/cri/containers', 'POST');
    assert.equal(r.status, 405);
  });
  it('answers 404 for a container the runtime does not know', async () => {
    const r = await send(join(dir, 'a.sock'), '/cri/containers/nope');
    assert.equal(r.status, 404);
    assert.match(r.body, /does not exist/);
  });
  it('is not served where no CRI host is given (the HTTPS listener never has it)', async () => {
    const r = await send(join(dir, 'b.sock'), '/cri/containers');
    assert.equal(r.status, 404);
  });
  it('leaves the kubelet API routes to the API handlers', async () => {
    const r = await send(join(dir, 'a.sock'), '/pods');
    assert.equal(r.status, 200);
    assert.match(r.body, /PodList/);
  });
});

describe('tskubelet ps / images / inspect / stats over the socket', () => {
  it('ps prints the running containers as crictl ps', async () => {
    const o = io();
    assert.equal(await runPs(client, {}, o), 0);
    assert.equal(
      o.out.text,
      'CONTAINER           IMAGE                          CREATED             STATE               NAME                ATTEMPT             POD ID              POD                 NAMESPACE\n' +
        'run1111111111       docker.io/library/nginx:1.25   30 seconds ago      Running             web                 2                   sssssssssssss       nginx               default\n',
    );
  });
  it('ps -a -q prints every id, newest first', async () => {
    const o = io();
    await runPs(client, { all: true, quiet: true }, o);
    assert.equal(o.out.text, `${running.id}\n${exited.id}\n`);
  });
  it('images prints the image table', async () => {
    const o = io();
    await runImages(client, {}, o);
    assert.equal(
      o.out.text,
      'IMAGE                     TAG                 IMAGE ID            SIZE\n' +
        'docker.io/library/nginx   1.25                9999999999999       70MB\n',
    );
  });
  it('inspect prints the status and the parsed info; an unknown id is an error naming it', async () => {
    const o = io();
    await runInspect(client, ['run1'], o);
    const doc = JSON.parse(o.out.text) as {
      info: { pid: number };
      status: { id: string; createdAt: string };
    };
    assert.equal(doc.info.pid, 42);
    assert.equal(doc.status.id, running.id);
    assert.equal(doc.status.createdAt, '2026-11-28T11:59:30Z');
    await assert.rejects(runInspect(client, ['nope'], io()), /container "nope"/);
  });
  it('stats samples twice and prints the CPU share between the samples', async () => {
    const o = io();
    await runStats(client, { sampleMs: 1 }, o);
    assert.equal(
      o.out.text,
      'CONTAINER           NAME                CPU %               MEM                 DISK                INODES\n' +
        'run1111111111       web                 50.00               2MB                 8.192kB             2\n',
    );
  });
  it('says the views are on the local socket only when the kubelet does not serve them', async () => {
    const other = await connectNode({ socket: join(dir, 'b.sock') });
    await assert.rejects(runPs(other, {}, io()), /local socket only/);
  });
});
