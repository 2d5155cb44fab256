import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  containerLogTail,
  createTerminationMessageMount,
  criLogContent,
  exitedContainerMessage,
  podContainerDir,
  readAtMost,
  readLastLines,
  type ExitedContainerInfo,
} from './termination-message.ts';

const TS = '2026-11-22T01:02:03.123456789Z';
const out = (text: string, tag = 'F') => `${TS} stdout ${tag} ${text}\n`;
const err = (text: string, tag = 'F') => `${TS} stderr ${tag} ${text}\n`;

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tskubelet-tmsg-'));
});
after(() => rm(dir, { recursive: true, force: true }));

async function file(name: string, content: string | Buffer): Promise<string> {
  const p = join(dir, name);
  await writeFile(p, content);
  return p;
}

describe('termination-message files', () => {
  it('creates an empty, world-writable file per start under <rootDir>/pods/<uid>/containers/<name>', async () => {
    const containerDir = podContainerDir(join(dir, 'root'), 'uid-1', 'main');
    assert.equal(containerDir, join(dir, 'root', 'pods', 'uid-1', 'containers', 'main'));
    const old = process.umask(0o022);
    try {
      const a = await createTerminationMessageMount(containerDir, '/dev/termination-log');
      const b = await createTerminationMessageMount(containerDir, '/dev/termination-log');
      assert.notEqual(a.hostPath, b.hostPath, 'each start gets its own file');
      assert.match(a.hostPath, /\/[0-9a-f]{8}$/);
      assert.deepEqual(
        { ...a, hostPath: '' },
        { hostPath: '', containerPath: '/dev/termination-log', readonly: false },
      );
      const st = await stat(a.hostPath);
      assert.equal(st.size, 0);
      assert.equal(st.mode & 0o777, 0o666);
      assert.equal((await readdir(containerDir)).length, 2);
    } finally {
      process.umask(old);
    }
  });

  it('reads at most the last bytes of a file', async () => {
    const p = await file('big', 'a'.repeat(10) + 'END');
    assert.equal((await readAtMost(p, 4)).toString(), 'aEND');
    assert.equal((await readAtMost(p, 100)).toString(), 'a'.repeat(10) + 'END');
    assert.equal((await readAtMost(await file('empty', ''), 4096)).length, 0);
  });
});

describe('CRI log tail', () => {
  it('keeps full lines with their newline and joins partial lines, from both streams', () => {
    const data = Buffer.from(out('hello') + err('part-', 'P') + err('ial') + out('x', 'F:future-tag'));
    assert.equal(criLogContent(data).toString(), 'hello\npart-ial\nx\n');
  });

  it('skips lines that are not CRI log lines, as upstream does', () => {
    const data = Buffer.from('garbage\n' + out('ok') + `${TS} weird F nope\n` + `not-a-time stdout F no\n`);
    assert.equal(criLogContent(data).toString(), 'ok\n');
  });

  it('reads the last N lines; an unterminated last line comes along uncounted', async () => {
    const p = await file('lines', 'l1\nl2\nl3\nl4\npartial');
    assert.equal((await readLastLines(p, 2)).toString(), 'l3\nl4\npartial');
    const q = await file('lines2', 'l1\nl2\nl3\n');
    assert.equal((await readLastLines(q, 2)).toString(), 'l2\nl3\n');
    assert.equal((await readLastLines(q, 10)).toString(), 'l1\nl2\nl3\n');
  });

  it('finds the last lines across read blocks of a large file', async () => {
    const long = 'x'.repeat(50_000);
    const p = await file('large', `${long}\n${long}\nshort\n`);
    assert.equal((await readLastLines(p, 2)).toString(), `${long}\nshort\n`);
  });

  it('keeps the last 80 lines and, of those, the last 2048 bytes', async () => {
    let text = '';
    for (let i = 1; i <= 100; i++) text += out(`line ${i}`);
    const p = await file('log100', text);
    const tail = await containerLogTail(p);
    assert.ok(tail.startsWith('line 21\n'), tail.slice(0, 20));
    assert.ok(tail.endsWith('line 100\n'));
    let big = '';
    for (let i = 1; i <= 50; i++) big += out(`${String(i).padStart(3, '0')} ${'y'.repeat(96)}`);
    const b = await containerLogTail(await file('logbig', big));
    assert.equal(Buffer.byteLength(b), 2048);
    assert.ok(b.endsWith(`050 ${'y'.repeat(96)}\n`));
  });

  it('says why when the log cannot be read', async () => {
    const tail = await containerLogTail(join(dir, 'missing.log'));
    assert.match(tail, /^Error on reading termination message from logs: .*ENOENT/);
  });
});

describe('terminated-state message', () => {
  const base = (over: Partial<ExitedContainerInfo>): ExitedContainerInfo => ({
    exitCode: 1,
    reason: 'Error',
    message: '',
    mounts: [],
    logPath: '',
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    ...over,
  });
  const mountOf = (hostPath: string) => [
    { containerPath: '/data', hostPath: '/elsewhere' },
    { containerPath: '/dev/termination-log', hostPath },
  ];

  it('is what the container wrote to its termination-message file', async () => {
    const p = await file('tm-ok', 'goodbye, world');
    const r = await exitedContainerMessage(base({ mounts: mountOf(p), exitCode: 0, reason: 'Completed' }));
    assert.deepEqual(r, { message: 'goodbye, world', fromLogs: false });
  });

  it('keeps only the last 4096 bytes of the file', async () => {
    const p = await file('tm-big', 'h'.repeat(1000) + 't'.repeat(4096));
    const r = await exitedContainerMessage(base({ mounts: mountOf(p) }));
    assert.equal(r.message, 't'.repeat(4096));
  });

  it('comes after the runtime message when the runtime has one', async () => {
    const p = await file('tm-rt', 'mine');
    const r = await exitedContainerMessage(base({ mounts: mountOf(p), message: 'runtime says' }));
    assert.equal(r.message, 'runtime says: mine');
  });

  it('falls back to the log tail with FallbackToLogsOnError, an empty file and a non-zero exit', async () => {
    const p = await file('tm-empty', '');
    const log = await file('c.log', out('starting') + err('panic: boom'));
    const r = await exitedContainerMessage(
      base({ mounts: mountOf(p), logPath: log, terminationMessagePolicy: 'FallbackToLogsOnError' }),
    );
    assert.deepEqual(r, { message: 'starting\npanic: boom\n', fromLogs: true });
  });

  it('does not read the log when the container succeeded, wrote a message, or never started', async () => {
    const empty = await file('tm-empty2', '');
    const written = await file('tm-written', 'written');
    const log = await file('c2.log', out('log line'));
    const policy = 'FallbackToLogsOnError';
    const ok = await exitedContainerMessage(
      base({ mounts: mountOf(empty), logPath: log, terminationMessagePolicy: policy, exitCode: 0 }),
    );
    assert.deepEqual(ok, { message: '', fromLogs: false });
    const wrote = await exitedContainerMessage(
      base({ mounts: mountOf(written), logPath: log, terminationMessagePolicy: policy }),
    );
    assert.deepEqual(wrote, { message: 'written', fromLogs: false });
    const cannotRun = await exitedContainerMessage(
      base({ mounts: mountOf(empty), logPath: log, terminationMessagePolicy: policy, reason: 'StartError' }),
    );
    assert.deepEqual(cannotRun, { message: '', fromLogs: false });
  });

  it('uses the log under FallbackToLogsOnError when there is no file at all, but never under File', async () => {
    const log = await file('c3.log', out('only the log'));
    const gone = mountOf(join(dir, 'deleted-file'));
    const fb = await exitedContainerMessage(
      base({ mounts: gone, logPath: log, terminationMessagePolicy: 'FallbackToLogsOnError' }),
    );
    assert.equal(fb.message, 'only the log\n');
    const file_ = await exitedContainerMessage(base({ mounts: gone, logPath: log }));
    assert.equal(file_.message, '');
  });
});
