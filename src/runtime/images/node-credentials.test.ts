import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  createNodeCredentials,
  dockerConfigSearchPaths,
  readNodeDockerConfig,
  type DockerConfigLocations,
} from './node-credentials.ts';
import { recordingLogger } from '../../util/testing.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const auth = (user: string, password = 'pw') => ({ auth: b64(`${user}:${password}`) });

let base = '';
/** A fresh tree per test: root dir, working dir, home and filesystem root side by side. */
let loc: Required<DockerConfigLocations>;

before(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'tskubelet-nodecreds-'));
});
after(async () => {
  await rm(base, { recursive: true, force: true });
});

let n = 0;
beforeEach(async () => {
  const dir = path.join(base, `t${n++}`);
  loc = {
    rootDir: path.join(dir, 'var/lib/kubelet'),
    cwd: path.join(dir, 'cwd'),
    home: path.join(dir, 'home/root'),
    fsRoot: path.join(dir, 'fsroot'),
  };
  for (const d of Object.values(loc)) await mkdir(d, { recursive: true });
});

async function put(file: string, content: unknown): Promise<string> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

const configJSON = (dir: string, auths: Record<string, unknown>) =>
  put(path.join(dir, 'config.json'), { auths });
const dockercfg = (dir: string, map: Record<string, unknown>) => put(path.join(dir, '.dockercfg'), map);

function users(found: Awaited<ReturnType<typeof readNodeDockerConfig>>): string[] {
  return found.entries.map(([, c]) => c.username);
}

void describe('docker config search paths (upstream DefaultDockerConfigJSONPaths / DefaultDockercfgPaths)', () => {
  void it('looks for config.json in the root dir, cwd, $HOME/.docker, /.docker, then .dockercfg', () => {
    assert.deepEqual(
      dockerConfigSearchPaths({ rootDir: '/var/lib/kubelet', cwd: '/srv', home: '/root', fsRoot: '/' }),
      {
        configJSON: [
          '/var/lib/kubelet/config.json',
          '/srv/config.json',
          '/root/.docker/config.json',
          '/.docker/config.json',
        ],
        dockercfg: ['/var/lib/kubelet/.dockercfg', '/srv/.dockercfg', '/root/.dockercfg', '/.dockercfg'],
      },
    );
  });

  void it('resolves a relative root dir against the working directory', () => {
    const p = dockerConfigSearchPaths({ rootDir: 'state', cwd: '/srv', home: '/root', fsRoot: '/' });
    assert.equal(p.configJSON[0], '/srv/state/config.json');
  });
});

void describe('reading the node docker config', () => {
  void it('finds nothing when there is no file', async () => {
    const found = await readNodeDockerConfig(dockerConfigSearchPaths(loc));
    assert.deepEqual(found, { path: undefined, entries: [], skipped: [] });
  });

  void it('uses the first config.json along the paths, and only that one', async () => {
    await configJSON(path.join(loc.home, '.docker'), { 'quay.io': auth('home') });
    const cwdFile = await configJSON(loc.cwd, { 'quay.io': auth('cwd') });
    const found = await readNodeDockerConfig(dockerConfigSearchPaths(loc));
    assert.equal(found.path, cwdFile);
    assert.deepEqual(users(found), ['cwd']);
    assert.equal(found.entries[0]?.[1].source, cwdFile);

    const rootFile = await configJSON(loc.rootDir, {
      '127.0.0.1:5001': auth('root', 's3cret'),
      'quay.io': { username: 'u', password: 'p' },
    });
    const again = await readNodeDockerConfig(dockerConfigSearchPaths(loc));
    assert.equal(again.path, rootFile);
    assert.deepEqual(
      again.entries.map(([l, c]) => [l, c.username, c.password]),
      [
        ['127.0.0.1:5001', 'root', 's3cret'],
        ['quay.io', 'u', 'p'],
      ],
    );
  });

  void it('looks in /.docker last', async () => {
    const file = await configJSON(path.join(loc.fsRoot, '.docker'), { 'quay.io': auth('fsroot') });
    const found = await readNodeDockerConfig(dockerConfigSearchPaths(loc));
    assert.equal(found.path, file);
  });

  void it('prefers any config.json over a .dockercfg, even one in the root dir', async () => {
    await dockercfg(loc.rootDir, { 'quay.io': auth('legacy') });
    await configJSON(path.join(loc.fsRoot, '.docker'), { 'quay.io': auth('json') });
    assert.deepEqual(users(await readNodeDockerConfig(dockerConfigSearchPaths(loc))), ['json']);
  });

  void it('falls back to .dockercfg in the root dir, cwd, $HOME, / (registry map at top level)', async () => {
    await dockercfg(loc.fsRoot, { 'quay.io': auth('fsroot') });
    const homeFile = await dockercfg(loc.home, { 'quay.io': auth('home') });
    const found = await readNodeDockerConfig(dockerConfigSearchPaths(loc));
    assert.equal(found.path, homeFile);
    assert.deepEqual(users(found), ['home']);
  });

  void it('skips a file that does not parse and goes on to the next, saying why', async () => {
    const bad = await put(path.join(loc.rootDir, 'config.json'), '{not json');
    const wrong = await put(path.join(loc.cwd, 'config.json'), { auths: ['a list'] });
    const badAuth = await configJSON(path.join(loc.home, '.docker'), { 'quay.io': { auth: '!!' } });
    const good = await dockercfg(loc.rootDir, { 'quay.io': auth('legacy') });
    const found = await readNodeDockerConfig(dockerConfigSearchPaths(loc));
    assert.equal(found.path, good);
    assert.deepEqual(
      found.skipped.map((s) => s.path),
      [bad, wrong, badAuth],
    );
    assert.match(found.skipped[0]?.reason ?? '', /JSON/);
    assert.match(found.skipped[2]?.reason ?? '', /base64/);
  });

  void it('reads a config.json without auths (e.g. credsStore only) as no credentials, and stops there', async () => {
    const file = await put(path.join(loc.rootDir, 'config.json'), { credsStore: 'desktop' });
    await dockercfg(loc.rootDir, { 'quay.io': auth('legacy') });
    const found = await readNodeDockerConfig(dockerConfigSearchPaths(loc));
    assert.equal(found.path, file);
    assert.deepEqual(found.entries, []);
  });

  void it('skips a search path that is a file, not a directory', async () => {
    await put(path.join(loc.home, '.docker'), 'not a directory');
    const file = await configJSON(path.join(loc.fsRoot, '.docker'), { 'quay.io': auth('fsroot') });
    const found = await readNodeDockerConfig(dockerConfigSearchPaths(loc));
    assert.equal(found.path, file);
    assert.deepEqual(found.skipped, []);
  });
});

void describe('node credentials keyring', () => {
  void it('looks credentials up by registry, as pull secrets are', async () => {
    await configJSON(loc.rootDir, {
      '127.0.0.1:5001': auth('bed'),
      'https://index.docker.io/v1/': auth('hub'),
    });
    const creds = createNodeCredentials(loc);
    const keyring = await creds.keyring();
    assert.deepEqual(
      keyring.lookup('127.0.0.1:5001/team/app').map((c) => c.username),
      ['bed'],
    );
    assert.deepEqual(
      keyring.lookup('docker.io/library/busybox').map((c) => c.username),
      ['hub'],
    );
    assert.deepEqual(keyring.lookup('quay.io/x'), []);
  });

  void it('caches the file for the cache period, then reads it again', async () => {
    let now = 1_000;
    const creds = createNodeCredentials({ ...loc, cacheMs: 10_000, monotonic: () => now });
    assert.equal((await creds.keyring()).size(), 0);
    await configJSON(loc.rootDir, { 'quay.io': auth('late') });
    now += 9_999;
    assert.equal((await creds.keyring()).size(), 0, 'still cached');
    now += 1;
    assert.deepEqual(
      (await creds.keyring()).lookup('quay.io/a').map((c) => c.username),
      ['late'],
    );
  });

  void it('shares one read between concurrent callers', async () => {
    await configJSON(loc.rootDir, { 'quay.io': auth('x') });
    const creds = createNodeCredentials(loc);
    const [a, b] = await Promise.all([creds.keyring(), creds.keyring()]);
    assert.equal(a, b);
  });

  void it('logs the file in use once, and a skipped file once until something changes', async () => {
    let now = 0;
    const logger = recordingLogger();
    await put(path.join(loc.rootDir, 'config.json'), '{broken');
    const good = await configJSON(loc.cwd, { 'quay.io': auth('x') });
    const creds = createNodeCredentials({ ...loc, cacheMs: 1, monotonic: () => now, logger });
    for (let i = 0; i < 3; i++) {
      await creds.keyring();
      now += 10;
    }
    assert.deepEqual(
      logger.lines.map((l) => [l.level, l.msg]),
      [
        ['warn', 'skipping an unusable docker config file for node registry credentials'],
        ['info', 'node registry credentials'],
      ],
    );
    assert.equal(logger.lines[1]?.fields['path'], good);
    assert.deepEqual(logger.lines[1]?.fields['registries'], ['quay.io']);
    assert.doesNotMatch(JSON.stringify(logger.lines), /pw/, 'never logs a credential');
  });
});
