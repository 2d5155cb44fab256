import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { request } from 'node:http';
import { chmod, lstat, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { until } from '../../test/kit/poll.ts';
import { nullLogger } from '../util/logger.ts';
import { createApiHandlers } from './api-handlers.ts';
import { createLocalSocketServer, socketAnswers, type LocalSocketServer } from './local-socket.ts';
import { fakeHost, testPod } from './testing.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-sock-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function server(path: string): LocalSocketServer {
  const host = fakeHost([{ pod: testPod('default', 'web', 'uid-1'), status: { phase: 'Running' } }]);
  const handlers = createApiHandlers({
    host,
    enableDebuggingHandlers: true,
    enableSystemLogHandler: false,
    streamingIdleTimeoutMs: 1000,
    logger: nullLogger,
  });
  return createLocalSocketServer({ path, handlers, logger: nullLogger });
}

function getOnSocket(
  socketPath: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

/** A unix socket left behind by a kubelet that was killed: the file exists, nobody listens. */
async function staleSocket(path: string): Promise<void> {
  const script = `require('node:net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`;
  await new Promise<void>((resolve) => {
    execFile(process.execPath, ['-e', script], { timeout: 10_000 }, () => resolve());
  });
  assert.ok((await lstat(path)).isSocket());
  assert.equal(await socketAnswers(path, 500), false);
}

describe('the local socket', () => {
  it('is created with mode 0600 and serves the kubelet API without credentials (/pods)', async () => {
    const path = join(dir, 'a.sock');
    const s = server(path);
    await s.start();
    try {
      const st = await stat(path);
      assert.ok(st.isSocket());
      assert.equal(st.mode & 0o777, 0o600);
      const res = await getOnSocket(path, '/pods');
      assert.equal(res.status, 200);
      const list = JSON.parse(res.body) as { kind: string; items: { metadata: { name: string } }[] };
      assert.equal(list.kind, 'PodList');
      assert.deepEqual(
        list.items.map((p) => p.metadata.name),
        ['web'],
      );
      assert.equal((await getOnSocket(path, '/nope')).status, 404);
    } finally {
      await s.close();
    }
    await assert.rejects(lstat(path), { code: 'ENOENT' }, 'removed on close');
  });

  it('routes upgrade requests (exec) to the same handlers: an unknown pod is refused with 404', async () => {
    const path = join(dir, 'b.sock');
    const s = server(path);
    await s.start();
    try {
      const res = await getOnSocket(path, '/exec/default/nope/c?command=ls&output=1', {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      });
      assert.equal(res.status, 404);
      assert.match(res.body, /pod does not exist/);
    } finally {
      await s.close();
    }
  });

  it('replaces a stale socket that nobody answers on', async () => {
    const path = join(dir, 'c.sock');
    await staleSocket(path);
    const s = server(path);
    await s.start();
    try {
      assert.equal((await getOnSocket(path, '/healthz')).body.trim(), 'ok');
    } finally {
      await s.close();
    }
  });

  it('refuses to start over a live socket, and leaves it alone', async () => {
    const path = join(dir, 'd.sock');
    const first = server(path);
    await first.start();
    try {
      const second = server(path);
      await assert.rejects(second.start(), /another process \(a running kubelet\?\) serves .*d\.sock/);
      assert.equal((await getOnSocket(path, '/healthz')).body.trim(), 'ok', 'the first one still answers');
    } finally {
      await first.close();
    }
  });

  it('refuses to replace a file that is not a socket', async () => {
    const path = join(dir, 'e.sock');
    await writeFile(path, 'data');
    await assert.rejects(server(path).start(), /exists and is not a socket/);
    assert.ok((await lstat(path)).isFile());
  });

  it('is never connectable by another user while it starts, even with umask 000 (bound in a private dir, then renamed)', async () => {
    // Another user (nobody) connects in a tight loop to every name in the socket's directory — the
    // final path, the predictable temporary name an earlier version bound first, and whatever else
    // shows up — while the socket is started and closed again and again with a umask of 000.
    const open = await mkdtemp(join(tmpdir(), 'tsk-sock-race-'));
    await chmod(open, 0o755); // the attacker may look in: only the socket's own protection counts
    const path = join(open, 'r.sock');
    const attacker = spawn(
      'runuser',
      ['-u', 'nobody', '--', 'python3', '-c', ATTACKER, open, `.r.sock.${process.pid}.tmp`],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    let out = '';
    attacker.stdout.setEncoding('utf8');
    attacker.stdout.on('data', (c: string) => (out += c));
    const exited = new Promise<void>((resolve) => attacker.once('exit', () => resolve()));
    const oldUmask = process.umask(0);
    try {
      await waitFor(() => out.includes('READY'));
      for (let i = 0; i < 150; i++) {
        const s = server(path);
        await s.start();
        assert.equal((await stat(path)).mode & 0o777, 0o600);
        await s.close();
      }
      assert.deepEqual(
        (await readdir(open)).filter((n) => n !== 'r.sock'),
        [],
        'no temporary directory or socket is left behind',
      );
    } finally {
      process.umask(oldUmask);
      attacker.stdin.end(); // stops the loop
      await exited;
      await rm(open, { recursive: true, force: true });
    }
    assert.match(out, /attempts=[1-9]/, 'the attacker did try');
    assert.doesNotMatch(out, /CONNECTED/, out);
  });
});

/** Polls `ready` every 10 ms, for at most 10 s. */
const waitFor = (ready: () => boolean) =>
  until('the socket to be ready', ready, { timeoutMs: 10_000, intervalMs: 10 });

/**
 * The attacker, run as nobody: connects over and over to every entry of the directory (and to
 * `<entry>/s`, a socket inside a subdirectory) and to the given predictable name, until stdin closes.
 * A connection that succeeds asks for /pods and prints `CONNECTED <path> <status line>`.
 */
const ATTACKER = `
import os, socket, sys, threading
d, guess = sys.argv[1], sys.argv[2]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
print('READY', flush=True)
attempts = 0
while not stop.is_set():
    try:
        names = os.listdir(d)
    except OSError:
        names = []
    for p in [os.path.join(d, guess)] + [os.path.join(d, n) for n in names] + [os.path.join(d, n, 's') for n in names]:
        s = socket.socket(socket.AF_UNIX)
        attempts += 1
        try:
            s.connect(p)
            s.sendall(b'GET /pods HTTP/1.0\\r\\n\\r\\n')
            print('CONNECTED', p, s.recv(64).split(b'\\r\\n')[0].decode(), flush=True)
        except OSError:
            pass
        finally:
            s.close()
print('attempts=%d' % attempts, flush=True)
`;
