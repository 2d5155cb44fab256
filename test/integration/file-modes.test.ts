/**
 * Nothing of a pod readable or writable by another local user (issue 24, item 1), on a real
 * tskubelet process and the test bed's containerd: `bin/tskubelet run` standalone, with a fresh root
 * dir, its own serving certificate (`--tls-cert-file`: the self-signed one used to make the root dir
 * 0700 by chance) and a umask of 000, runs a static pod whose non-root container reads a
 * downwardAPI volume (tmpfs) and writes to an emptyDir on disk and one in memory. Then, as `nobody`,
 * every file and directory under the root dir and the pod logs dir is tried: none can be read,
 * listed, written or connected to. The container user, meanwhile, read its files.
 *
 * Run under the shared bed lock, one file at a time:
 *   flock /tmp/tskubelet-bed.lock node --test test/integration/file-modes.test.ts
 */
import assert from 'node:assert/strict';
import { chmod, lstat, mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { IMAGE, podManifest, setupEnv, type Env } from '../kit/bed.ts';
import { freePort } from '../kit/net.ts';
import { shellAs } from '../kit/as-user.ts';
import { makeSelfSignedPair } from '../../src/server/serving-cert.ts';
import { eventually } from '../kit/poll.ts';
import { spawnTskubelet, type TskubeletProcess } from '../kit/process.ts';

const NODE_NAME = 'itest-modes';
const modeOf = async (p: string) => (await stat(p)).mode & 0o7777;

/** Every path below `dir` (dir included), as root sees them; one gone meanwhile is skipped. */
async function walk(dir: string, out: string[] = []): Promise<string[]> {
  const st = await lstat(dir).catch(() => undefined);
  if (!st) return out; // removed while we walked (a temporary file renamed into place)
  out.push(dir);
  if (!st.isDirectory()) return out;
  for (const name of await readdir(dir).catch(() => [])) await walk(join(dir, name), out);
  return out;
}

/**
 * The attacker, run as nobody: for each path given on stdin, tries to list it (a directory), read
 * and write it without truncating (a file), or connect to it (a socket). Prints each success.
 */
const ATTACKER = `
import os, socket, stat, sys
for p in sys.stdin.read().split('\\0'):
    if not p:
        continue
    try:
        mode = os.lstat(p).st_mode
    except OSError:
        continue  # not even reachable: the point
    tries = []
    if stat.S_ISDIR(mode):
        tries.append(('list', lambda: os.listdir(p)))
    elif stat.S_ISSOCK(mode):
        def conn():
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(p)
            finally:
                s.close()
        tries.append(('connect', conn))
    elif stat.S_ISREG(mode):
        tries.append(('read', lambda: os.close(os.open(p, os.O_RDONLY))))
        tries.append(('write', lambda: os.close(os.open(p, os.O_WRONLY))))
    for what, f in tries:
        try:
            f()
            print(what, p, flush=True)
        except OSError:
            pass
`;

async function nobodyCan(paths: readonly string[]): Promise<string[]> {
  const r = await shellAs('nobody', ['python3', '-c', ATTACKER], {
    input: paths.join('\0'),
    timeoutMs: 60_000,
  });
  assert.equal(r.code, 0, `the attacker script ran: ${r.stderr}`);
  return r.stdout.split('\n').filter((l) => l !== '');
}

let env: Env | undefined;
let proc: TskubeletProcess | undefined;
let rootDir = '';
let logsDir = '';
let out = '';

before(async () => {
  env = await setupEnv();
  // The test's own directory is open to all: only what the kubelet makes below it may keep nobody out.
  await chmod(env.dir, 0o755);
  rootDir = join(env.dir, 'root'); // fresh: the kubelet makes it
  logsDir = join(env.dir, 'logs');
  out = join(env.dir, 'out');
  await mkdir(out, { mode: 0o777 });
  await chmod(out, 0o777);
  const manifests = join(env.dir, 'manifests');
  await mkdir(manifests, { recursive: true });
  const certFile = join(env.dir, 'serving.crt');
  const keyFile = join(env.dir, 'serving.key');
  await makeSelfSignedPair({ keyFile, certFile, subject: `/CN=${NODE_NAME}`, days: 1 });
  const configFile = join(env.dir, 'kubelet.yaml');
  await writeFile(
    configFile,
    stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      staticPodPath: manifests,
      containerRuntimeEndpoint: env.bed.endpoint,
      podLogsDir: logsDir,
      fileCheckFrequency: '1s',
      tlsCertFile: certFile,
      tlsPrivateKeyFile: keyFile,
    }),
  );
  const script = [
    'id -u > /out/uid',
    'cat /podinfo/labels > /scratch/labels',
    'cp /scratch/labels /mem/labels',
    'cat /mem/labels > /out/labels',
    'echo "the pod says: $(cat /podinfo/name)"',
    'exec sleep 3600',
  ].join('; ');
  await writeFile(
    join(manifests, 'modes.yaml'),
    stringify({
      ...podManifest('modes', {
        securityContext: { runAsUser: 1000, runAsGroup: 1000 },
        volumes: [
          {
            name: 'podinfo',
            downwardAPI: {
              items: [
                { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
                { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
              ],
            },
          },
          { name: 'scratch', emptyDir: {} },
          { name: 'mem', emptyDir: { medium: 'Memory' } },
          { name: 'out', hostPath: { path: out, type: 'Directory' } },
        ],
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sh', '-c', script],
            volumeMounts: [
              { name: 'podinfo', mountPath: '/podinfo' },
              { name: 'scratch', mountPath: '/scratch' },
              { name: 'mem', mountPath: '/mem' },
              { name: 'out', mountPath: '/out' },
            ],
          },
        ],
      }),
      metadata: { name: 'modes', labels: { token: 's3cret-label' } },
    }),
  );
  // The kubelet inherits the umask: 000, so any file or directory made without a mode is open to all.
  const umask = process.umask(0);
  try {
    proc = spawnTskubelet(
      [
        'run',
        '--config',
        configFile,
        '--root-dir',
        rootDir,
        '--hostname-override',
        NODE_NAME,
        '--node-ip',
        '127.0.0.1',
        '--healthz-port',
        '0',
        '--port',
        String(await freePort()),
      ],
      { logFile: join(env.dir, 'tskubelet.log') },
    );
  } finally {
    process.umask(umask);
  }
  await eventually(
    'the container (uid 1000) copied its downwardAPI labels through both emptyDirs',
    async () => {
      await proc?.assertRunning();
      const text = await readFile(join(out, 'labels'), 'utf8').catch(() => '');
      return text.includes('s3cret-label') ? text : undefined;
    },
    90_000,
  );
});

after(async () => {
  await proc?.stop();
  await env?.close();
});

void describe('file modes of a real tskubelet (standalone, fresh root dir, --tls-cert-file, umask 000)', () => {
  void it('the container user (1000, not root) read its downwardAPI files and wrote to both emptyDirs', async () => {
    assert.equal((await readFile(join(out, 'uid'), 'utf8')).trim(), '1000');
    assert.match(await readFile(join(out, 'labels'), 'utf8'), /token="s3cret-label"/);
  });

  void it('makes the root dir, pods/, the pod dir and its volume dirs, and the pod log dirs 0750', async () => {
    const pods = await readdir(join(rootDir, 'pods'));
    assert.equal(pods.length, 1);
    const podDir = join(rootDir, 'pods', pods[0] ?? '');
    const [logDir = ''] = await readdir(logsDir);
    for (const d of [
      rootDir,
      join(rootDir, 'pods'),
      podDir,
      join(podDir, 'volumes'),
      join(podDir, 'volumes', 'kubernetes.io~downward-api'),
      join(podDir, 'volumes', 'kubernetes.io~empty-dir'),
      logsDir,
      join(logsDir, logDir),
      join(logsDir, logDir, 'main'),
    ]) {
      assert.equal(await modeOf(d), 0o750, d);
    }
    const volumes = join(podDir, 'volumes');
    assert.equal(
      await modeOf(join(volumes, 'kubernetes.io~downward-api', 'podinfo')),
      0o755,
      'tmpfs mode=0755',
    );
    assert.equal(await modeOf(join(volumes, 'kubernetes.io~empty-dir', 'scratch')), 0o777);
    assert.equal(await modeOf(join(volumes, 'kubernetes.io~empty-dir', 'mem')), 0o1777, 'tmpfs mode=1777');
    assert.equal(await modeOf(join(rootDir, 'tskubelet.sock')), 0o600);
  });

  void it('gives nothing in the pod log dir (directories, logs, rotated logs) a bit for others', async () => {
    const files = (await walk(logsDir)).filter((p) => p !== logsDir);
    assert.ok(
      files.some((f) => f.endsWith('0.log')),
      'the container log is there',
    );
    for (const f of files) assert.equal((await lstat(f)).mode & 0o007, 0, f);
  });

  void it('lets nobody read, list, write or connect to anything under the root dir or the pod logs dir', async () => {
    const paths = [...(await walk(rootDir)), ...(await walk(logsDir))];
    assert.ok(
      paths.some((p) => p.includes('kubernetes.io~downward-api') && p.endsWith('labels')),
      'the walk reached the volume files',
    );
    assert.deepEqual(await nobodyCan(paths), []);
    // The issue's own probe, by name: the shell's glob and cat both fail.
    const probe = await shellAs('nobody', [
      'sh',
      '-c',
      `cat ${rootDir}/pods/*/volumes/kubernetes.io~downward-api/*/* ${logsDir}/*/*/*.log`,
    ]);
    assert.notEqual(probe.code, 0, 'nobody read a volume file or a log');
    assert.match(probe.stderr, /Permission denied/);
    // The probe itself works: a world-readable file in the same open directory is read.
    await writeFile(join(out, 'public'), 'x', { mode: 0o644 });
    assert.deepEqual(await nobodyCan([join(out, 'public')]), [`read ${join(out, 'public')}`]);
  });
});
