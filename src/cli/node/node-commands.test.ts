import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable, type Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { PodStatus } from '../../api/types.ts';
import { createApiHandlers } from '../../server/api-handlers.ts';
import { createLocalSocketServer, type LocalSocketServer } from '../../server/local-socket.ts';
import { fakeHost, testPod } from '../../server/testing.ts';
import { nullLogger } from '../../util/logger.ts';
import { connectNode, NodeApiError, type NodeClient } from './client.ts';
import { runExec } from './exec.ts';
import { CLOSE, ERROR, STDIN, STDOUT } from './exec-client.ts';
import { runGetPods, type CommandIO } from './get-pods.ts';
import { runLogs } from './logs.ts';
import { runTimeline } from './timeline.ts';
import { FrameParser, OP_BINARY, OP_CLOSE, acceptFor } from './websocket.ts';

/** An unmasked server frame. */
function serverFrame(opcode: number, payload: Buffer): Buffer {
  const head = payload.length < 126 ? Buffer.from([0x80 | opcode, payload.length]) : Buffer.alloc(4);
  if (payload.length >= 126) {
    head[0] = 0x80 | opcode;
    head[1] = 126;
    head.writeUInt16BE(payload.length, 2);
  }
  return Buffer.concat([head, payload]);
}
const channel = (c: number, data: string) =>
  serverFrame(OP_BINARY, Buffer.concat([Buffer.from([c]), Buffer.from(data)]));
const SUCCESS = '{"metadata":{},"status":"Success"}';
const exitStatus = (code: number) =>
  JSON.stringify({
    status: 'Failure',
    reason: 'NonZeroExitCode',
    message: `command terminated with non-zero exit code: exit status ${code}`,
    details: { causes: [{ reason: 'ExitCode', message: String(code) }] },
  });

/**
 * A runtime streaming server speaking remotecommand over WebSocket: `echo ARGS` writes them,
 * `exit N` fails with exit code N, `cat` echoes stdin back once the client closes it (v5).
 */
function fakeStreamingServer(sessions: Map<string, string[]>): Server {
  const server = createServer();
  server.on('upgrade', (req: IncomingMessage, socket: Duplex) => {
    const token = (req.url ?? '').split('/').pop() ?? '';
    const cmd = sessions.get(token) ?? [];
    const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(/, */);
    const protocol = offered.includes('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : 'v4.channel.k8s.io';
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Accept: ${acceptFor(String(req.headers['sec-websocket-key']))}\r\n` +
        `Sec-WebSocket-Protocol: ${protocol}\r\n\r\n`,
    );
    // The opening empty message of each channel, as the real server sends.
    socket.write(serverFrame(OP_BINARY, Buffer.from([STDOUT])));
    const finish = (status: string) => {
      socket.write(channel(ERROR, status));
      socket.write(serverFrame(OP_CLOSE, Buffer.from([0x03, 0xe8])));
      socket.end();
    };
    if (cmd[0] === 'echo') {
      socket.write(channel(STDOUT, `${cmd.slice(1).join(' ')}\n`));
      finish(SUCCESS);
      return;
    }
    if (cmd[0] === 'exit') {
      finish(exitStatus(Number(cmd[1])));
      return;
    }
    const parser = new FrameParser();
    let input = '';
    socket.on('data', (chunk: Buffer) => {
      for (const m of parser.push(chunk)) {
        if (m.data[0] === STDIN) input += m.data.subarray(1).toString();
        if (m.data[0] === CLOSE && m.data[1] === STDIN) {
          socket.write(channel(STDOUT, input.toUpperCase()));
          finish(SUCCESS);
        }
      }
    });
  });
  return server;
}

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

function io(signal = new AbortController().signal): CommandIO & { out: Capture; err: Capture } {
  return { out: new Capture(), err: new Capture(), signal, now: () => Date.parse('2026-11-24T20:00:00Z') };
}

let dir: string;
let socketServer: LocalSocketServer;
let streaming: Server;
let client: NodeClient;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-cli-'));
  const logPath = join(dir, 'main.log');
  await writeFile(
    logPath,
    '2026-11-24T19:59:00.000000000Z stdout F one\n2026-11-24T19:59:01.000000000Z stdout F two\n2026-11-24T19:59:02.000000000Z stderr F three\n',
  );
  const sessions = new Map<string, string[]>();
  streaming = fakeStreamingServer(sessions);
  await new Promise<void>((r) => streaming.listen(0, '127.0.0.1', r));
  const port = (streaming.address() as AddressInfo).port;
  const status: PodStatus = {
    phase: 'Running',
    podIPs: [{ ip: '10.88.0.9' }],
    conditions: [{ type: 'Ready', status: 'True' }],
    containerStatuses: [
      {
        name: 'c',
        state: { running: {} },
        lastState: {},
        ready: true,
        restartCount: 0,
        image: 'busybox:1.29',
        imageID: '',
        containerID: 'containerd://cid-1',
      },
    ],
  };
  let n = 0;
  const host = fakeHost([{ pod: testPod('default', 'web', 'uid-1'), status }], {
    findRunningContainer: () => Promise.resolve('cid-1'),
    containerLogPath: () => Promise.resolve(logPath),
    isContainerRunning: () => Promise.resolve(false),
    runtime: {
      exec: (_id, cmd) => {
        if (cmd[0] === 'fail') return Promise.reject(new Error('runtime refused the exec'));
        const token = `t${++n}`;
        sessions.set(token, [...cmd]);
        return Promise.resolve(`http://127.0.0.1:${port}/exec/${token}`);
      },
      attach: () => Promise.reject(new Error('no attach')),
      portForward: () => Promise.reject(new Error('no port-forward')),
      execSync: () => Promise.reject(new Error('no execSync')),
    },
  });
  const handlers = createApiHandlers({
    host,
    enableDebuggingHandlers: true,
    enableSystemLogHandler: false,
    streamingIdleTimeoutMs: 5_000,
    logger: nullLogger,
  });
  socketServer = createLocalSocketServer({ path: join(dir, 'tskubelet.sock'), handlers, logger: nullLogger });
  await socketServer.start();
  client = await connectNode({ socket: join(dir, 'tskubelet.sock') });
});

after(async () => {
  await socketServer.close();
  await new Promise<void>((r) => streaming.close(() => r()));
  await rm(dir, { recursive: true, force: true });
});

describe('node commands over the local socket', () => {
  it('get pods prints the kubelet pods as kubectl does; another namespace has none', async () => {
    const a = io();
    assert.equal(await runGetPods(client, undefined, {}, a), 0);
    assert.match(
      a.out.text,
      /^NAME {3}READY {3}STATUS {4}RESTARTS {3}AGE\nweb {4}1\/1 {5}Running {3}0 {10}<unknown>\n$/,
    );
    const b = io();
    assert.equal(await runGetPods(client, undefined, { namespace: 'kube-system' }, b), 0);
    assert.equal(b.err.text, 'No resources found in kube-system namespace.\n');
    const c = io();
    assert.equal(await runGetPods(client, 'nope', {}, c), 1);
    assert.match(c.err.text, /pods "nope" not found/);
  });

  it('get pods -w prints the pods, then stops quietly when interrupted', async () => {
    const ac = new AbortController();
    const w = io(ac.signal);
    const running = runGetPods(
      client,
      undefined,
      { watch: true, output: 'name' },
      { ...w, watchPeriodMs: 20 },
    );
    setTimeout(() => ac.abort(), 100);
    assert.equal(await running, 0);
    assert.equal(w.out.text, 'pod/web\n', 'an unchanged pod is printed once');
    const ac2 = new AbortController();
    const t = io(ac2.signal);
    const table = runGetPods(client, undefined, { watch: true }, { ...t, watchPeriodMs: 20 });
    setTimeout(() => ac2.abort(), 100);
    assert.equal(await table, 0);
    assert.equal(
      t.out.text,
      'NAME   READY   STATUS    RESTARTS   AGE\nweb    1/1     Running   0          <unknown>\n',
    );
  });

  it('logs prints the container log lines; --tail keeps the last ones', async () => {
    const a = io();
    assert.equal(await runLogs(client, 'web', {}, a), 0);
    assert.equal(a.out.text, 'one\ntwo\nthree\n');
    const b = io();
    await runLogs(client, 'web', { tail: 1 }, b);
    assert.equal(b.out.text, 'three\n');
    await assert.rejects(
      runLogs(client, 'web', { container: 'nope' }, io()),
      /container nope is not valid for pod web/,
    );
  });

  const term = () => ({ stdin: new PassThrough() });

  it('exec streams the output and returns 0 for a command that succeeds', async () => {
    const a = io();
    assert.equal(await runExec(client, 'web', ['echo', 'hi'], {}, a, term()), 0);
    assert.equal(a.out.text, 'hi\n');
  });

  it('exec waits for a slow local output instead of buffering without bound', async () => {
    class Slow extends Writable {
      text = '';
      constructor() {
        super({ highWaterMark: 1 });
      }
      override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
        this.text += chunk.toString();
        setTimeout(cb, 5);
      }
    }
    const out = new Slow();
    const a = { ...io(), out };
    assert.equal(await runExec(client, 'web', ['echo', 'slowly', 'but', 'surely'], {}, a, term()), 0);
    assert.equal(out.text, 'slowly but surely\n');
  });

  it("exec returns the remote command's exit code", async () => {
    assert.equal(await runExec(client, 'web', ['exit', '3'], {}, io(), term()), 3);
  });

  it('exec -i sends stdin and closes it at its end (v5), so the command can finish', async () => {
    const t = term();
    const a = io();
    const done = runExec(client, 'web', ['cat'], { stdin: true }, a, t);
    t.stdin.end('shout\n');
    assert.equal(await done, 0);
    assert.equal(a.out.text, 'SHOUT\n');
  });

  it('exec -t without a terminal says so and runs without one', async () => {
    const a = io();
    assert.equal(await runExec(client, 'web', ['echo', 'x'], { tty: true }, a, term()), 0);
    assert.match(a.err.text, /Unable to use a TTY/);
  });

  it('exec -it puts the terminal in raw mode, sends its size, and restores it even when the exec fails', async () => {
    const modes: boolean[] = [];
    const stdin = Object.assign(new PassThrough(), {
      isTTY: true,
      setRawMode: (m: boolean) => modes.push(m),
    });
    const t = { stdin, columns: () => 100, rows: () => 40 };
    const a = io();
    const done = runExec(client, 'web', ['cat'], { stdin: true, tty: true }, a, t);
    stdin.end('x');
    assert.equal(await done, 0);
    assert.deepEqual(modes, [true, false]);
    modes.length = 0;
    await assert.rejects(
      runExec(client, 'nope', ['sh'], { stdin: true, tty: true }, io(), t),
      /pods "nope" not found/,
    );
    assert.deepEqual(modes, [], 'raw mode is never entered before the pod is found');
    await assert.rejects(
      runExec(client, 'web', ['fail'], { stdin: true, tty: true }, io(), t),
      /runtime refused the exec/,
    );
    assert.deepEqual(modes, [true, false], 'restored after the kubelet refused the stream');
  });

  it('timeline of a pod the kubelet does not know says the pod is not found', async () => {
    await assert.rejects(runTimeline(client, 'nope', {}, io()), /pods "nope" not found in namespace default/);
  });

  it('timeline on a kubelet without the route explains it rather than claiming the pod is missing', async () => {
    const older: NodeClient = {
      target: 'unix:/older.sock',
      getJSON: () => Promise.reject(new NodeApiError(404, '404 page not found')),
      getStream: () => Promise.reject(new Error('unused')),
      upgrade: () => Promise.reject(new Error('unused')),
    };
    await assert.rejects(runTimeline(older, 'web', {}, io()), /does not serve \/debug\/pods\/…\/timeline/);
  });

  it('a missing socket is one clear error', async () => {
    const c = await connectNode({ socket: join(dir, 'missing.sock') });
    await assert.rejects(runGetPods(c, undefined, {}, io()), /no kubelet socket at .*missing\.sock/);
  });
});

describe('logs on a terminal', () => {
  /** A container that tries to clear the screen, set the title and rewrite a line. */
  const LINE = 'ok \u001b[2J\u001b]0;pwned\u0007 \u009b31m done\rFAKE';
  let logDir: string;
  let sock: LocalSocketServer;
  let c: NodeClient;
  before(async () => {
    logDir = await mkdtemp(join(tmpdir(), 'tsk-cli-term-'));
    const logPath = join(logDir, 'main.log');
    await writeFile(logPath, `2026-11-24T19:59:00.000000000Z stdout F ${LINE}\n`);
    const status: PodStatus = {
      phase: 'Running',
      containerStatuses: [
        {
          name: 'c',
          state: { running: {} },
          lastState: {},
          ready: true,
          restartCount: 0,
          image: 'busybox:1.29',
          imageID: '',
          containerID: 'containerd://cid-1',
        },
      ],
    };
    const host = fakeHost([{ pod: testPod('default', 'web', 'uid-1'), status }], {
      containerLogPath: () => Promise.resolve(logPath),
      isContainerRunning: () => Promise.resolve(false),
    });
    const handlers = createApiHandlers({
      host,
      enableDebuggingHandlers: true,
      enableSystemLogHandler: false,
      streamingIdleTimeoutMs: 5_000,
      logger: nullLogger,
    });
    sock = createLocalSocketServer({ path: join(logDir, 'tskubelet.sock'), handlers, logger: nullLogger });
    await sock.start();
    c = await connectNode({ socket: join(logDir, 'tskubelet.sock') });
  });
  after(async () => {
    await sock.close();
    await rm(logDir, { recursive: true, force: true });
  });

  it('shows control sequences escaped when stdout is a terminal', async () => {
    const a = { ...io(), outIsTerminal: true };
    assert.equal(await runLogs(c, 'web', {}, a), 0);
    assert.equal(a.out.text, 'ok ^[[2J^[]0;pwned\\x07 \\u009b31m done\\rFAKE\n');
  });

  it('writes the bytes as they are when stdout is a pipe or a file, as kubectl does', async () => {
    const a = { ...io(), outIsTerminal: false };
    assert.equal(await runLogs(c, 'web', {}, a), 0);
    assert.equal(a.out.text, `${LINE}\n`);
  });
});

describe('command errors', () => {
  it("print the kubelet's words with their control sequences escaped", async () => {
    const { runNodeCommand } = await import('./runner.ts');
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = (chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    };
    let code: number;
    try {
      code = await runNodeCommand({ socket: '/nonexistent/tskubelet.sock' }, () =>
        Promise.reject(new Error('container "c" is waiting to start: \u001b]0;pwned\u0007\u009b2J')),
      );
    } finally {
      process.stderr.write = write;
    }
    assert.equal(code, 1);
    assert.deepEqual(written, ['error: container "c" is waiting to start: ^[]0;pwned\\x07\\u009b2J\n']);
  });
});
