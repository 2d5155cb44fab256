import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { lstat, mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeletPod, Pod, Volume, VolumeMount } from '../api/types.ts';
import { KubeletError, hasCode } from '../util/errors.ts';
import {
  createVolumeManager,
  emptyDirPath,
  projectedVolumePath,
  type VolumeManager,
} from './volume-manager.ts';
import { subPathTarget } from './subpath.ts';
import { mountAt, unmountAllUnder } from './mounts.ts';
import type { ApiRequest } from '../api/client-types.ts';
import { FakeApi, apiError } from '../api/testing.ts';
import { b64, fakeObjectSource, volumePod, type FakeObjectSource } from './testing.ts';
import { createTokenManager, type TokenRequestSpec } from './token-manager.ts';

let seq = 0;
function podWith(volumes: Volume[], mounts?: VolumeMount[], extra: Partial<Pod['spec']> = {}): KubeletPod {
  seq += 1;
  return volumePod(`p${seq}`, `uid-${seq}`, volumes, mounts, { spec: extra });
}

const dataDirs = async (dir: string) => (await readdir(dir)).filter((n) => /^\.\.\d/.test(n));
const procMounts = () => readFile('/proc/mounts', 'utf8');

describe('volume manager: secret, configMap, downwardAPI, projected', () => {
  let root = '';
  let objects: FakeObjectSource;
  let vm: VolumeManager;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'volume-manager-'));
    objects = fakeObjectSource();
    objects.secrets.set('ns/creds', {
      metadata: { name: 'creds', resourceVersion: '1' },
      data: { user: b64('admin'), pass: b64('s3cret') },
    });
    objects.configMaps.set('ns/conf', {
      metadata: { name: 'conf' },
      data: { 'app.conf': 'x=1\n' },
      binaryData: { blob: b64('\x00\x01\x02') },
    });
    vm = createVolumeManager({ rootDir: root, objects });
  });
  afterEach(async () => {
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it('writes a secret volume onto tmpfs, decoded, with the default mode, mounted read-only', async () => {
    const pod = podWith(
      [{ name: 'creds', secret: { secretName: 'creds', defaultMode: 0o400 } }],
      [{ name: 'creds', mountPath: '/etc/creds', readOnly: false }],
    );
    await vm.setUpPodVolumes(pod);
    const dir = projectedVolumePath(root, 'uid-' + seq, 'secret', 'creds');
    assert.equal(dir, join(root, 'pods', `uid-${seq}`, 'volumes', 'kubernetes.io~secret', 'creds'));
    assert.equal((await mountAt(dir))?.fsType, 'tmpfs');
    assert.equal(await readFile(join(dir, 'user'), 'utf8'), 'admin');
    assert.equal(await readFile(join(dir, 'pass'), 'utf8'), 's3cret');
    assert.equal((await stat(join(dir, 'pass'))).mode & 0o777, 0o400);
    assert.ok((await lstat(join(dir, 'user'))).isSymbolicLink());

    const [mount] = await vm.mountsFor(pod, pod.spec.containers[0] ?? { name: '' });
    assert.deepEqual(mount, {
      containerPath: '/etc/creds',
      hostPath: dir,
      readonly: true,
      propagation: 'PROPAGATION_PRIVATE',
    });
  });

  it('keeps a configMap volume on disk with data and binaryData', async () => {
    const pod = podWith([{ name: 'conf', configMap: { name: 'conf' } }]);
    await vm.setUpPodVolumes(pod);
    const dir = projectedVolumePath(root, `uid-${seq}`, 'configMap', 'conf');
    assert.ok(dir.includes('kubernetes.io~configmap'));
    assert.equal(await mountAt(dir), undefined, 'configMap volumes are not memory-backed');
    assert.equal(await readFile(join(dir, 'app.conf'), 'utf8'), 'x=1\n');
    assert.deepEqual([...(await readFile(join(dir, 'blob')))], [0, 1, 2]);
    assert.equal((await stat(join(dir, 'app.conf'))).mode & 0o777, 0o644);
  });

  it('sets up only the volumes a container uses: an unused one is neither read nor put on disk (upstream GetPodVolumeNames)', async () => {
    const pod = podWith(
      [
        { name: 'conf', configMap: { name: 'conf' } },
        { name: 'unused-secret', secret: { secretName: 'no-such-secret' } },
        { name: 'unused-scratch', emptyDir: {} },
      ],
      [{ name: 'conf', mountPath: '/etc/conf' }],
    );
    await vm.setUpPodVolumes(pod);
    assert.equal(
      await readFile(join(projectedVolumePath(root, `uid-${seq}`, 'configMap', 'conf'), 'app.conf'), 'utf8'),
      'x=1\n',
    );
    assert.ok(!objects.calls.some((c) => c.includes('no-such-secret')), objects.calls.join(', '));
    await assert.rejects(stat(projectedVolumePath(root, `uid-${seq}`, 'secret', 'unused-secret')), /ENOENT/);
    await assert.rejects(stat(emptyDirPath(root, `uid-${seq}`, 'unused-scratch')), /ENOENT/);
  });

  it('does no disk work on a sync when nothing changed, and updates atomically when the object does', async () => {
    const pod = podWith([{ name: 'creds', secret: { secretName: 'creds' } }]);
    const dir = projectedVolumePath(root, `uid-${seq}`, 'secret', 'creds');
    await vm.setUpPodVolumes(pod);
    const first = await dataDirs(dir);
    for (let i = 0; i < 3; i++) await vm.setUpPodVolumes(pod);
    assert.deepEqual(await dataDirs(dir), first);
    assert.equal(objects.calls.length, 4, 'the object is read on every sync (the source caches)');

    objects.secrets.set('ns/creds', {
      metadata: { name: 'creds', resourceVersion: '2' },
      data: { user: b64('root') },
    });
    await vm.setUpPodVolumes(pod);
    const second = await dataDirs(dir);
    assert.equal(second.length, 1);
    assert.notDeepEqual(second, first);
    assert.equal(await readFile(join(dir, 'user'), 'utf8'), 'root');
    await assert.rejects(lstat(join(dir, 'pass')), { code: 'ENOENT' }, 'a removed key disappears');
  });

  it('does not rewrite unchanged content after a kubelet restart', async () => {
    const pod = podWith([{ name: 'creds', secret: { secretName: 'creds' } }]);
    const dir = projectedVolumePath(root, `uid-${seq}`, 'secret', 'creds');
    await vm.setUpPodVolumes(pod);
    const before = await dataDirs(dir);
    const restarted = createVolumeManager({ rootDir: root, objects });
    await restarted.setUpPodVolumes(pod);
    assert.deepEqual(await dataDirs(dir), before);
    assert.equal(
      (await procMounts()).split('\n').filter((l) => l.includes(dir)).length,
      1,
      'no second tmpfs',
    );
  });

  it('applies items, per-item modes and optional semantics', async () => {
    const pod = podWith([
      {
        name: 'some',
        secret: { secretName: 'creds', items: [{ key: 'pass', path: 'db/password', mode: 0o440 }] },
      },
      { name: 'maybe', secret: { secretName: 'absent', optional: true } },
    ]);
    await vm.setUpPodVolumes(pod);
    const some = projectedVolumePath(root, `uid-${seq}`, 'secret', 'some');
    assert.deepEqual(
      (await readdir(some)).filter((n) => !n.startsWith('..')),
      ['db'],
    );
    assert.equal(await readFile(join(some, 'db/password'), 'utf8'), 's3cret');
    assert.equal((await stat(join(some, 'db/password'))).mode & 0o777, 0o440);
    const maybe = projectedVolumePath(root, `uid-${seq}`, 'secret', 'maybe');
    assert.deepEqual(
      (await readdir(maybe)).filter((n) => !n.startsWith('..')),
      [],
      'optional missing → empty',
    );
  });

  it('fails a required missing object or key with a message naming it', async () => {
    await assert.rejects(
      vm.setUpPodVolumes(podWith([{ name: 'v', secret: { secretName: 'nope' } }])),
      (err) =>
        hasCode(err, 'NotFound') &&
        /mount volume v: secret "nope" not found in namespace ns/.test(String(err)),
    );
    const items = [{ key: 'missing', path: 'm' }];
    await assert.rejects(
      vm.setUpPodVolumes(podWith([{ name: 'v', configMap: { name: 'conf', items } }])),
      (err) => hasCode(err, 'NotFound') && /configMap ns\/conf has no key "missing"/.test(String(err)),
    );
  });

  it('fails secret volumes clearly in standalone mode', async () => {
    const standalone = createVolumeManager({ rootDir: root });
    await assert.rejects(
      standalone.setUpPodVolumes(podWith([{ name: 'creds', secret: { secretName: 'creds' } }])),
      (err) =>
        err instanceof KubeletError &&
        err.code === 'FailedPrecondition' &&
        err.message === 'mount volume creds: secret volumes need an API server (cluster mode)',
    );
  });

  it('group-owns files for fsGroup and adds group read', async () => {
    const pod = podWith([{ name: 'creds', secret: { secretName: 'creds', defaultMode: 0o400 } }], undefined, {
      securityContext: { fsGroup: 2000 },
    });
    await vm.setUpPodVolumes(pod);
    const dir = projectedVolumePath(root, `uid-${seq}`, 'secret', 'creds');
    const st = await stat(join(dir, 'user'));
    assert.equal(st.gid, 2000);
    assert.equal(st.mode & 0o777, 0o440);
    assert.equal((await stat(dir)).gid, 2000);
    const before = await dataDirs(dir);
    await createVolumeManager({ rootDir: root, objects }).setUpPodVolumes(pod);
    assert.deepEqual(await dataDirs(dir), before, 'ownership counts as unchanged content');
  });

  it('writes downwardAPI and projected volumes under their plugin directories', async () => {
    const pod = podWith([
      { name: 'info', downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
      {
        name: 'all',
        projected: {
          sources: [
            { secret: { name: 'creds', items: [{ key: 'user', path: 'user' }] } },
            { configMap: { name: 'conf', items: [{ key: 'app.conf', path: 'conf/app.conf' }] } },
          ],
        },
      },
    ]);
    await vm.setUpPodVolumes(pod);
    const info = projectedVolumePath(root, `uid-${seq}`, 'downwardAPI', 'info');
    assert.ok(info.includes('kubernetes.io~downward-api'));
    assert.equal(await readFile(join(info, 'name'), 'utf8'), pod.metadata.name);
    const all = projectedVolumePath(root, `uid-${seq}`, 'projected', 'all');
    assert.ok(all.includes('kubernetes.io~projected'));
    assert.equal((await mountAt(all))?.fsType, 'tmpfs');
    assert.equal(await readFile(join(all, 'user'), 'utf8'), 'admin');
    assert.equal(await readFile(join(all, 'conf/app.conf'), 'utf8'), 'x=1\n');
  });

  it('mounts a subPath of a projected volume and refuses one that does not exist', async () => {
    const pod = podWith(
      [{ name: 'conf', configMap: { name: 'conf' } }],
      [
        { name: 'conf', mountPath: '/etc/app.conf', subPath: 'app.conf' },
        { name: 'conf', mountPath: '/etc/other', subPath: 'other.conf' },
      ],
    );
    await vm.setUpPodVolumes(pod);
    const container = { name: 'c', volumeMounts: pod.spec.containers[0]?.volumeMounts?.slice(0, 1) ?? [] };
    const [m] = await vm.mountsFor(pod, container);
    // The runtime mounts the kubelet's bind of the checked file, under the pod's volume-subpaths.
    const target = subPathTarget({
      rootDir: root,
      podUID: `uid-${seq}`,
      volume: 'conf',
      container: 'c',
      index: 0,
    });
    assert.equal(m?.hostPath, target);
    assert.ok(await mountAt(target), 'a bind of the file');
    assert.equal(await readFile(target, 'utf8'), 'x=1\n');
    assert.equal(m?.readonly, true);
    await assert.rejects(
      vm.mountsFor(pod, pod.spec.containers[0] ?? { name: '' }),
      (err) =>
        hasCode(err, 'NotFound') && /subPath "other.conf" does not exist in volume conf/.test(String(err)),
    );
  });

  it('puts an emptyDir with medium Memory on a tmpfs of its sizeLimit', async () => {
    const pod = podWith([{ name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '2Mi' } }]);
    await vm.setUpPodVolumes(pod);
    const dir = join(root, 'pods', `uid-${seq}`, 'volumes', 'kubernetes.io~empty-dir', 'mem');
    assert.equal((await mountAt(dir))?.fsType, 'tmpfs');
    const line = (await procMounts()).split('\n').find((l) => l.includes(dir)) ?? '';
    assert.match(line, /size=2048k/);
  });

  it('keeps memory-backed volumes on disk when tmpfs is disabled', async () => {
    const onDisk = createVolumeManager({ rootDir: root, objects, tmpfs: false });
    await onDisk.setUpPodVolumes(podWith([{ name: 'creds', secret: { secretName: 'creds' } }]));
    const dir = projectedVolumePath(root, `uid-${seq}`, 'secret', 'creds');
    assert.equal(await mountAt(dir), undefined);
    assert.equal(await readFile(join(dir, 'user'), 'utf8'), 'admin');
  });

  it('unmounts every tmpfs before removing the pod directory', async () => {
    const pod = podWith([
      { name: 'creds', secret: { secretName: 'creds' } },
      { name: 'mem', emptyDir: { medium: 'Memory' } },
      { name: 'disk', emptyDir: {} },
    ]);
    await vm.setUpPodVolumes(pod);
    const uid = pod.metadata.uid ?? '';
    const dir = join(root, 'pods', uid);
    assert.equal((await procMounts()).split('\n').filter((l) => l.includes(dir)).length, 2);
    await vm.cleanUpPod(uid);
    assert.ok(!(await procMounts()).includes(dir), 'no mount left under the pod directory');
    await assert.rejects(stat(dir), { code: 'ENOENT' });
  });

  it('keeps the pod directory when a tmpfs cannot be unmounted, and succeeds once it can', async () => {
    const pod = podWith([{ name: 'creds', secret: { secretName: 'creds' } }]);
    await vm.setUpPodVolumes(pod);
    const uid = pod.metadata.uid ?? '';
    const vol = projectedVolumePath(root, uid, 'secret', 'creds');
    // A process whose working directory is inside the tmpfs keeps it busy.
    const busy = spawn('sleep', ['60'], { cwd: vol, stdio: 'ignore' });
    await once(busy, 'spawn');
    try {
      await assert.rejects(
        vm.cleanUpPod(uid),
        (err) => hasCode(err, 'Internal') && /pod directory kept/.test(String(err)),
      );
      assert.equal(await readFile(join(vol, 'user'), 'utf8'), 'admin', 'nothing deleted through the mount');
    } finally {
      busy.kill('SIGKILL');
      await once(busy, 'exit');
    }
    await vm.cleanUpPod(uid);
    await assert.rejects(stat(join(root, 'pods', uid)), { code: 'ENOENT' });
  });

  it('still sets up emptyDir and hostPath volumes', async () => {
    const pod = podWith(
      [
        { name: 'scratch', emptyDir: {} },
        { name: 'host', hostPath: { path: root, type: 'Directory' } },
      ],
      [
        { name: 'scratch', mountPath: '/scratch' },
        { name: 'host', mountPath: '/host', readOnly: true },
      ],
    );
    await vm.setUpPodVolumes(pod);
    const mounts = await vm.mountsFor(pod, pod.spec.containers[0] ?? { name: '' });
    assert.deepEqual(
      mounts.map((m) => [m.containerPath, m.readonly]),
      [
        ['/scratch', false],
        ['/host', true],
      ],
    );
    assert.equal((await stat(mounts[0]?.hostPath ?? '')).mode & 0o777, 0o777);
  });

  it('group-owns an emptyDir for fsGroup, setgid, so what the pod writes there is the group’s', async () => {
    for (const medium of ['', 'Memory']) {
      const pod = podWith([{ name: 'scratch', emptyDir: { medium } }], undefined, {
        securityContext: { fsGroup: 123 },
      });
      await vm.setUpPodVolumes(pod);
      const dir = join(root, 'pods', pod.metadata.uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
      const st = await stat(dir);
      assert.equal(st.gid, 123, medium);
      assert.equal(st.mode & 0o2777, 0o2777, medium); // tmpfs adds the sticky bit, as upstream's does
    }
  });

  it('makes a missing subPath with the volume root’s mode and group: world-writable, setgid, fsGroup', async () => {
    const pod = podWith(
      [{ name: 'scratch', emptyDir: { medium: 'Memory' } }],
      [{ name: 'scratch', mountPath: '/test-volume', subPath: 'test-sub/deeper' }],
      { securityContext: { fsGroup: 123 } },
    );
    await vm.setUpPodVolumes(pod);
    await vm.mountsFor(pod, pod.spec.containers[0] ?? { name: '' });
    const volume = emptyDirPath(root, `uid-${seq}`, 'scratch');
    for (const dir of [join(volume, 'test-sub'), join(volume, 'test-sub/deeper')]) {
      const st = await stat(dir);
      assert.equal(st.mode & 0o7777, 0o3777, dir); // the tmpfs root's sticky bit too (e2e: dgtrwxrwxrwx)
      assert.equal(st.gid, 123, dir);
    }
  });
});

describe('volume manager: serviceAccountToken projections', () => {
  const T0 = Date.parse('2025-03-01T00:00:00Z');
  let root = '';
  let objects: FakeObjectSource;
  let api: FakeApi;
  let clock = T0;
  let vm: VolumeManager;
  const tokenPath = (sa = 'default') => `/api/v1/namespaces/ns/serviceaccounts/${sa}/token`;
  const posts = () => api.requestsFor('POST').length;
  const tokenVolume = (over: Record<string, unknown> = {}, defaultMode?: number): Volume => ({
    name: 'token',
    projected: {
      ...(defaultMode !== undefined && { defaultMode }),
      sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600, ...over } }],
    },
  });

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'volume-manager-token-'));
    clock = T0;
    objects = fakeObjectSource();
    api = new FakeApi();
    let issued = 0;
    // A TokenRequest endpoint issuing jwt-1, jwt-2, … valid for the requested seconds from `clock`.
    api.respond('POST', /\/serviceaccounts\/[^/]+\/token$/, (req: ApiRequest) => {
      const { spec } = req.body as { spec: TokenRequestSpec };
      issued += 1;
      return {
        kind: 'TokenRequest',
        spec,
        status: {
          token: `jwt-${issued}`,
          expirationTimestamp: new Date(clock + spec.expirationSeconds * 1000).toISOString(),
        },
      };
    });
    const tokens = createTokenManager({ api, monotonic: () => clock, random: () => 0 });
    vm = createVolumeManager({ rootDir: root, objects, tokens });
  });
  afterEach(async () => {
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  it('writes the token bound to the pod at its path, 0644 by default, on tmpfs, mounted read-only', async () => {
    const pod = podWith(
      [tokenVolume({ audience: 'vault' })],
      [{ name: 'token', mountPath: '/var/run/secrets/tokens' }],
      { serviceAccountName: 'builder' },
    );
    await vm.setUpPodVolumes(pod);
    const [req] = api.requestsFor('POST', tokenPath('builder'));
    assert.deepEqual(req?.body, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: ['vault'],
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid },
      },
    });
    const dir = projectedVolumePath(root, pod.metadata.uid, 'projected', 'token');
    assert.equal((await mountAt(dir))?.fsType, 'tmpfs');
    assert.equal(await readFile(join(dir, 'token'), 'utf8'), 'jwt-1');
    assert.equal((await stat(join(dir, 'token'))).mode & 0o777, 0o644);
    const [mount] = await vm.mountsFor(pod, pod.spec.containers[0] ?? { name: '' });
    assert.equal(mount?.readonly, true);
  });

  it('honours the projection defaultMode, and makes the token 0640 and group-owned under an fsGroup', async () => {
    const plain = podWith([tokenVolume({}, 0o400)]);
    await vm.setUpPodVolumes(plain);
    const plainDir = projectedVolumePath(root, plain.metadata.uid, 'projected', 'token');
    assert.equal((await stat(join(plainDir, 'token'))).mode & 0o777, 0o400);

    const grouped = podWith([tokenVolume({}, 0o644)], undefined, { securityContext: { fsGroup: 2000 } });
    await vm.setUpPodVolumes(grouped);
    const dir = projectedVolumePath(root, grouped.metadata.uid, 'projected', 'token');
    const st = await stat(join(dir, 'token'));
    assert.equal(st.mode & 0o777, 0o640);
    assert.equal(st.gid, 2000);
    assert.equal((await stat(dir)).gid, 2000);
  });

  it('reuses the cached token on every sync before a refresh is due, without touching the disk', async () => {
    const pod = podWith([tokenVolume()]);
    await vm.setUpPodVolumes(pod);
    const dir = projectedVolumePath(root, pod.metadata.uid, 'projected', 'token');
    const before = await dataDirs(dir);
    clock = T0 + 2880_000; // 80 % of the hour: not past it yet
    await vm.setUpPodVolumes(pod);
    await vm.setUpPodVolumes(pod);
    assert.equal(posts(), 1);
    assert.deepEqual(await dataDirs(dir), before);
    assert.equal(await readFile(join(dir, 'token'), 'utf8'), 'jwt-1');
  });

  it('rewrites the token file once 80 % of its lifetime has passed', async () => {
    const pod = podWith([tokenVolume()]);
    await vm.setUpPodVolumes(pod);
    const dir = projectedVolumePath(root, pod.metadata.uid, 'projected', 'token');
    const before = await dataDirs(dir);
    clock = T0 + 2881_000;
    await vm.setUpPodVolumes(pod);
    assert.equal(posts(), 2);
    assert.equal(await readFile(join(dir, 'token'), 'utf8'), 'jwt-2');
    assert.notDeepEqual(await dataDirs(dir), before, 'written atomically as a new data directory');
  });

  it('rewrites a long-lived token file once the token is older than 24 h', async () => {
    const pod = podWith([tokenVolume({ expirationSeconds: 7 * 86_400 })]);
    await vm.setUpPodVolumes(pod);
    const dir = projectedVolumePath(root, pod.metadata.uid, 'projected', 'token');
    clock = T0 + 86_400_000;
    await vm.setUpPodVolumes(pod);
    assert.equal(await readFile(join(dir, 'token'), 'utf8'), 'jwt-1');
    clock = T0 + 86_401_000;
    await vm.setUpPodVolumes(pod);
    assert.equal(await readFile(join(dir, 'token'), 'utf8'), 'jwt-2');
  });

  it('fails the mount with the API error, naming the volume and the service account, and writes nothing', async () => {
    api.respondOnce('POST', tokenPath('ci'), apiError(403, 'Forbidden', 'denied'));
    const pod = podWith([tokenVolume()], undefined, { serviceAccountName: 'ci' });
    await assert.rejects(
      vm.setUpPodVolumes(pod),
      (err) =>
        err instanceof KubeletError &&
        err.code === 'PermissionDenied' &&
        err.message ===
          'mount volume token: request token for serviceaccount ns/ci: failed to fetch token: ' +
            'fake api: 403 Forbidden: denied',
    );
    await assert.rejects(stat(projectedVolumePath(root, pod.metadata.uid, 'projected', 'token')), {
      code: 'ENOENT',
    });
  });

  it('fails serviceAccountToken volumes clearly in standalone mode', async () => {
    const standalone = createVolumeManager({ rootDir: root });
    await assert.rejects(
      standalone.setUpPodVolumes(podWith([tokenVolume()])),
      (err) =>
        err instanceof KubeletError &&
        err.code === 'FailedPrecondition' &&
        err.message === 'mount volume token: serviceAccountToken volumes need an API server (cluster mode)',
    );
    assert.equal(posts(), 0);
  });

  it('forgets a deleted pod’s tokens when its volumes are cleaned up', async () => {
    const gone = podWith([tokenVolume()]);
    const kept = podWith([tokenVolume()]);
    await vm.setUpPodVolumes(gone);
    await vm.setUpPodVolumes(kept);
    await vm.cleanUpPod(gone.metadata.uid);
    await vm.setUpPodVolumes(kept);
    assert.equal(posts(), 2, 'the other pod keeps its cached token');
    await vm.setUpPodVolumes(gone); // same UID again: nothing cached any more
    assert.equal(posts(), 3);
  });

  it('sets up the default kube-api-access volume: token, cluster CA and namespace', async () => {
    objects.configMaps.set('ns/kube-root-ca.crt', {
      metadata: { name: 'kube-root-ca.crt' },
      data: { 'ca.crt': '-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n' },
    });
    // As the 1.21+ ServiceAccount admission plugin adds it (after pod defaulting).
    const volume: Volume = {
      name: 'kube-api-access-x7k2p',
      projected: {
        defaultMode: 0o644,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          {
            downwardAPI: {
              items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
            },
          },
        ],
      },
    };
    const mountPath = '/var/run/secrets/kubernetes.io/serviceaccount';
    const pod = podWith([volume], [{ name: volume.name, mountPath, readOnly: true }], {
      serviceAccountName: 'default',
    });
    await vm.setUpPodVolumes(pod);
    const dir = projectedVolumePath(root, pod.metadata.uid, 'projected', volume.name);
    assert.equal(await readFile(join(dir, 'token'), 'utf8'), 'jwt-1');
    assert.match(await readFile(join(dir, 'ca.crt'), 'utf8'), /BEGIN CERTIFICATE/);
    assert.equal(await readFile(join(dir, 'namespace'), 'utf8'), 'ns');
    for (const f of ['token', 'ca.crt', 'namespace']) {
      assert.equal((await stat(join(dir, f))).mode & 0o777, 0o644, f);
    }
    const [req] = api.requestsFor('POST', tokenPath());
    assert.deepEqual((req?.body as { spec: TokenRequestSpec }).spec, {
      audiences: [],
      expirationSeconds: 3607,
      boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid },
    });
    const [mount] = await vm.mountsFor(pod, pod.spec.containers[0] ?? { name: '' });
    assert.deepEqual(mount, {
      containerPath: mountPath,
      hostPath: dir,
      readonly: true,
      propagation: 'PROPAGATION_PRIVATE',
    });
    // Past 3607 s − ⌊20 % of it⌋ = 2886 s the token is replaced; the other files stay.
    clock = T0 + 2887_000;
    await vm.setUpPodVolumes(pod);
    assert.equal(await readFile(join(dir, 'token'), 'utf8'), 'jwt-2');
    assert.equal(await readFile(join(dir, 'namespace'), 'utf8'), 'ns');
  });
});

describe('volume manager: volumes their plugin measures', () => {
  it("lists a pod's inline CSI volumes with the plugin's numbers (NodeGetVolumeStats), and none once the pod is gone", async () => {
    const root = await mkdtemp(join(tmpdir(), 'volume-manager-'));
    try {
      const usage = {
        capacityBytes: 10,
        availableBytes: 6,
        usedBytes: 4,
        inodes: 5,
        inodesFree: 3,
        inodesUsed: 2,
      };
      const vm = createVolumeManager({
        rootDir: root,
        inlineCsi: {
          setUp: () => Promise.resolve(),
          hostPath: (pod, v) => join(root, pod.metadata.uid, v.name),
          metrics: (podUID, volume) => (volume === 'scratch' ? { usage, time: podUID.length } : undefined),
        },
      });
      const pod = podWith([
        { name: 'scratch', csi: { driver: 'hostpath.csi.test' } },
        { name: 'tmp', emptyDir: {} },
      ]);
      await vm.setUpPodVolumes(pod);
      const listed = vm.measuredVolumes(pod.metadata.uid);
      assert.deepEqual(
        listed.map((m) => [m.volume, m.claimName, m.mode]),
        [['scratch', undefined, 'Filesystem']],
        'the emptyDir is walked instead',
      );
      assert.deepEqual(listed[0]?.metrics?.(), { usage, time: pod.metadata.uid.length });
      await vm.cleanUpPod(pod.metadata.uid);
      assert.deepEqual(vm.measuredVolumes(pod.metadata.uid), []);
    } finally {
      await unmountAllUnder(root);
      await rm(root, { recursive: true, force: true });
    }
  });
});
