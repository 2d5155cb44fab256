/**
 * Image pulls on real containerd from real registries on loopback (test/harness/registry.ts): an
 * open one (127.0.0.1:5000) and one that answers 401 without credentials (127.0.0.1:5001).
 *
 * The image manager is driven directly with our CRI client for what needs pull secrets (the
 * standalone kubelet has none to give), and a standalone kubelet shows the pod-level outcome: with
 * the node's own credentials (a docker `config.json` in its root dir) it pulls from the registry
 * that wants credentials for pods without pull secrets, and a `tskubelet run` process configured
 * by a KubeletConfiguration file (image pull settings) does the same.
 *
 * Run under the shared bed lock:
 *   flock /tmp/tskubelet-itest.lock node_modules/.bin/node --test test/integration/image-pulls.test.ts
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { BUSYBOX_IMAGE, buildImage } from '../harness/index.ts';
import { startRegistry, type Registry } from '../harness/registry.ts';
import {
  createImageManager,
  ImageError,
  type ImageManager,
  type ImageManagerDeps,
} from '../../src/runtime/images/image-manager.ts';
import {
  DOCKER_CONFIG_JSON_KEY,
  SECRET_TYPE_DOCKER_CONFIG_JSON,
  type PullSecret,
} from '../../src/runtime/images/pull-secrets.ts';
import { createMemoryRecorder } from '../../src/api/events.ts';
import type { Container, KubeletPod, PullPolicy } from '../../src/api/types.ts';
import type { ImageService, PodSandboxConfig } from '../../src/runtime/cri/types.ts';
import { isNotFound } from '../../src/util/errors.ts';
import { runTeardown } from '../kit/teardown.ts';
import { podManifest, setupEnv, testLogger, writeManifest, type Env } from '../kit/bed.ts';
import { freePort } from '../kit/net.ts';
import { eventually } from '../kit/poll.ts';
import { untilLocalPodPhase } from '../kit/local-api.ts';
import { findPod, startKubelet, waitForPhase, type RunningKubelet } from './support.ts';
import { spawnTskubelet, type TskubeletProcess } from '../kit/process.ts';
import { buildPod } from '../kit/pod.ts';

const CREDS = { user: 'bed', password: 'pull-s3cret' };
const OPEN_REPO = 'tskubelet/busybox';
const PRIVATE_REPO = 'tskubelet/private';
const TAG = 'pulltest';

let env: Env | undefined;
let open: Registry | undefined;
let priv: Registry | undefined;

function bed(): { env: Env; open: Registry; priv: Registry } {
  if (!env || !open || !priv) throw new Error('test bed not set up (before() failed?)');
  return { env, open, priv };
}

const openImage = () => `${bed().open.url}/${OPEN_REPO}:${TAG}`;
const privateImage = () => `${bed().priv.url}/${PRIVATE_REPO}:${TAG}`;

before(async () => {
  env = await setupEnv();
  open = await startRegistry({ logger: testLogger() });
  priv = await startRegistry({ auth: CREDS, logger: testLogger() });
  // The bed's busybox image, under other names: the content is the same, the references are not.
  const built = await buildImage({ ref: BUSYBOX_IMAGE, cmd: ['sh'] });
  await open.push(built.tarPath, `${OPEN_REPO}:${TAG}`);
  await priv.push(built.tarPath, `${PRIVATE_REPO}:${TAG}`);
});

after(async () => {
  await runTeardown([() => env?.close(), () => priv?.stop(), () => open?.stop()]);
});

/** Removes a reference from containerd so the next IfNotPresent has to pull. */
async function forget(image: string): Promise<void> {
  try {
    await bed().env.cri.image.removeImage({ image });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

function dockerConfigSecret(server: string, user: string, password: string): PullSecret {
  const config = { auths: { [server]: { auth: Buffer.from(`${user}:${password}`).toString('base64') } } };
  return {
    metadata: { name: 'regcred', namespace: 'default' },
    type: SECRET_TYPE_DOCKER_CONFIG_JSON,
    data: { [DOCKER_CONFIG_JSON_KEY]: Buffer.from(JSON.stringify(config)).toString('base64') },
  };
}

function testPod(name: string, pullSecrets = false): KubeletPod {
  return buildPod(name, {
    uid: `uid-${name}-${Date.now()}`,
    containers: [],
    ...(pullSecrets ? { spec: { imagePullSecrets: [{ name: 'regcred' }] } } : {}),
  });
}

function sandboxOf(pod: KubeletPod): PodSandboxConfig {
  return {
    metadata: {
      name: pod.metadata.name,
      namespace: 'default',
      uid: pod.metadata.uid,
      attempt: 0,
    },
  };
}

/** The real CRI image service, counting PullImage calls. */
function countingImages(): { svc: ImageService; pulls: () => number } {
  const real = bed().env.cri.image;
  let pulls = 0;
  return {
    svc: {
      ...real,
      listImages: real.listImages.bind(real),
      imageStatus: real.imageStatus.bind(real),
      removeImage: real.removeImage.bind(real),
      imageFsInfo: real.imageFsInfo.bind(real),
      pullImage(...args) {
        pulls++;
        return real.pullImage(...args);
      },
    },
    pulls: () => pulls,
  };
}

function manager(overrides: Partial<ImageManagerDeps> = {}) {
  const images = countingImages();
  const recorder = createMemoryRecorder();
  const m: ImageManager = createImageManager({
    images: images.svc,
    recorder,
    logger: testLogger(),
    ...overrides,
  });
  const ensure = (pod: KubeletPod, image: string, imagePullPolicy: PullPolicy) => {
    const c: Container = { name: 'app', image, imagePullPolicy };
    return m.ensureImage(pod, c, sandboxOf(pod), AbortSignal.timeout(60_000));
  };
  return { ensure, pulls: images.pulls, events: recorder.events };
}

async function rejection(p: Promise<string>): Promise<ImageError> {
  const err = await p.then(
    (ref) => assert.fail(`expected the pull to fail, got ${ref}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ImageError, `expected an ImageError, got ${String(err)}`);
  return err;
}

void describe('image pulls from the open registry', () => {
  void it('Always pulls on every start, from the registry', async () => {
    await forget(openImage());
    const m = manager();
    const pod = testPod('always');
    const before = await bed().open.manifestRequests(OPEN_REPO);
    const first = await m.ensure(pod, openImage(), 'Always');
    const second = await m.ensure(pod, openImage(), 'Always');
    assert.equal(m.pulls(), 2);
    assert.equal(first, second);
    assert.ok((await bed().open.manifestRequests(OPEN_REPO)) >= before + 2, 'the registry saw both pulls');
    const status = await bed().env.cri.image.imageStatus({ image: openImage() });
    assert.equal(status?.id, first);
    assert.deepEqual(
      m.events.map((e) => e.reason),
      ['Pulling', 'Pulled', 'Pulling', 'Pulled'],
    );
    assert.match(m.events[1]?.message ?? '', /^Successfully pulled image ".*" in \d+(\.\d+)?(ms|s)$/);
  });

  void it('IfNotPresent pulls a missing image once, then uses it', async () => {
    await forget(openImage());
    const m = manager();
    const pod = testPod('ifnotpresent');
    await m.ensure(pod, openImage(), 'IfNotPresent');
    await m.ensure(pod, openImage(), 'IfNotPresent');
    assert.equal(m.pulls(), 1);
    assert.deepEqual(
      m.events.map((e) => e.reason),
      ['Pulling', 'Pulled', 'Pulled'],
    );
    assert.match(m.events[2]?.message ?? '', /already present on machine/);
  });

  void it('Never fails with ErrImageNeverPull for a missing image, without pulling', async () => {
    await forget(openImage());
    const m = manager();
    const err = await rejection(m.ensure(testPod('never'), openImage(), 'Never'));
    assert.equal(err.reason, 'ErrImageNeverPull');
    assert.equal(m.pulls(), 0);
    assert.equal(await bed().env.cri.image.imageStatus({ image: openImage() }), null);
  });

  void it('shares one pull between pods asking at once', async () => {
    await forget(openImage());
    const m = manager();
    const refs = await Promise.all(
      ['a', 'b', 'c'].map((n) => m.ensure(testPod(`shared-${n}`), openImage(), 'IfNotPresent')),
    );
    assert.equal(m.pulls(), 1);
    assert.equal(new Set(refs).size, 1);
  });
});

void describe('image pulls from the registry that wants credentials', () => {
  void it('pulls with a dockerconfigjson pull secret', async () => {
    await forget(privateImage());
    const { priv } = bed();
    const m = manager({
      pullSecrets: () => Promise.resolve([dockerConfigSecret(priv.url, CREDS.user, CREDS.password)]),
    });
    const ref = await m.ensure(testPod('private-ok', true), privateImage(), 'IfNotPresent');
    const status = await bed().env.cri.image.imageStatus({ image: privateImage() });
    assert.equal(status?.id, ref);
  });

  void it('is refused without a secret: ErrImagePull (401), then ImagePullBackOff', async () => {
    await forget(privateImage());
    const m = manager();
    const pod = testPod('private-none');
    const first = await rejection(m.ensure(pod, privateImage(), 'IfNotPresent'));
    assert.equal(first.reason, 'ErrImagePull');
    assert.match(first.message, /401 Unauthorized/);
    const second = await rejection(m.ensure(pod, privateImage(), 'IfNotPresent'));
    assert.equal(second.reason, 'ImagePullBackOff');
    assert.equal(m.pulls(), 1, 'no pull while backing off');
    assert.deepEqual(
      m.events.map((e) => e.reason),
      ['Pulling', 'Failed', 'BackOff'],
    );
  });

  void it('is refused with a wrong password', async () => {
    await forget(privateImage());
    const { priv } = bed();
    const m = manager({
      pullSecrets: () => Promise.resolve([dockerConfigSecret(priv.url, CREDS.user, 'wrong')]),
    });
    const err = await rejection(m.ensure(testPod('private-wrong', true), privateImage(), 'IfNotPresent'));
    assert.equal(err.reason, 'ErrImagePull');
    assert.match(err.message, /401 Unauthorized/);
  });
});

void describe('a standalone kubelet pulling for its pods', () => {
  let k: RunningKubelet | undefined;
  before(async () => {
    await forget(openImage());
    await forget(privateImage());
    k = await startKubelet(bed().env);
  });
  after(async () => {
    await k?.stop();
  });

  void it('pulls a missing image and runs the pod', async () => {
    if (!k) throw new Error('kubelet not started');
    await writeManifest(
      bed().env,
      'pulled.yaml',
      podManifest('pulled', {
        containers: [{ name: 'main', image: openImage(), command: ['sleep', '3600'] }],
      }),
    );
    await waitForPhase(k.kubelet, 'pulled', 'Running', 60_000);
    const reasons = k.events.filter((e) => e.pod.includes('pulled')).map((e) => e.reason);
    assert.ok(reasons.includes('Pulling') && reasons.includes('Pulled'), reasons.join(','));
  });

  void it('reports ErrImagePull, then ImagePullBackOff, for an image it may not pull', async () => {
    const kubelet = k?.kubelet;
    if (!kubelet) throw new Error('kubelet not started');
    await writeManifest(
      bed().env,
      'denied.yaml',
      podManifest('denied', {
        containers: [{ name: 'main', image: privateImage(), command: ['sleep', '3600'] }],
      }),
    );
    const waitingReason = (reason: string) =>
      eventually(
        `waiting reason ${reason}`,
        () => {
          const s = findPod(kubelet, 'denied')?.status?.containerStatuses?.[0];
          return s?.state.waiting?.reason === reason ? s : undefined;
        },
        // The pod worker retries a failed start after 10-15 s; the second window is 20 s.
        60_000,
        () => findPod(kubelet, 'denied')?.status,
      );
    const pullError = await waitingReason('ErrImagePull');
    assert.match(pullError.state.waiting?.message ?? '', /401 Unauthorized/);
    const backOff = await waitingReason('ImagePullBackOff');
    assert.match(backOff.state.waiting?.message ?? '', /Back-off pulling image/);
    assert.equal(findPod(kubelet, 'denied')?.status?.phase, 'Pending');
  });
});

/** A docker config.json granting the registry's credentials, as `docker login` writes it. */
async function writeNodeDockerConfig(dir: string, server: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, 'config.json');
  const auth = Buffer.from(`${CREDS.user}:${CREDS.password}`).toString('base64');
  await writeFile(file, JSON.stringify({ auths: { [server]: { auth } } }, null, 2));
  return file;
}

void describe('a standalone kubelet with node credentials (config.json in its root dir)', () => {
  let k: RunningKubelet | undefined;
  let nodeEnv: Env | undefined;
  before(async () => {
    await forget(privateImage());
    // Its own root and manifests: the kubelet above had none of this and stays unaffected.
    const base = bed().env;
    nodeEnv = {
      ...base,
      rootDir: join(base.dir, 'root-creds'),
      manifests: join(base.dir, 'manifests-creds'),
    };
    await writeNodeDockerConfig(nodeEnv.rootDir, bed().priv.url);
    k = await startKubelet(nodeEnv);
  });
  after(async () => {
    await k?.stop();
  });

  void it('pulls for a pod without imagePullSecrets from the registry that wants credentials', async () => {
    const kubelet = k?.kubelet;
    if (!kubelet || !nodeEnv) throw new Error('kubelet not started');
    await writeManifest(
      nodeEnv,
      'node-creds.yaml',
      podManifest('node-creds', {
        containers: [{ name: 'main', image: privateImage(), command: ['sleep', '3600'] }],
      }),
    );
    await waitForPhase(kubelet, 'node-creds', 'Running', 60_000);
    const reasons = (k?.events ?? []).filter((e) => e.pod.includes('node-creds')).map((e) => e.reason);
    assert.ok(reasons.includes('Pulling') && reasons.includes('Pulled'), reasons.join(','));
    assert.ok(!reasons.includes('Failed'), reasons.join(','));
    assert.notEqual(await bed().env.cri.image.imageStatus({ image: privateImage() }), null);
  });
});

/** A TCP port nothing listens on right now. */

void describe('a tskubelet process with image pull settings in its config file', () => {
  let proc: TskubeletProcess | undefined;
  let dir = '';
  let logFile = '';
  let port = 0;

  before(async () => {
    await forget(openImage());
    await forget(privateImage());
    dir = join(bed().env.dir, 'proc');
    const rootDir = join(dir, 'root');
    const manifests = join(dir, 'manifests');
    await mkdir(manifests, { recursive: true });
    await writeNodeDockerConfig(rootDir, bed().priv.url);
    port = await freePort();
    const configFile = join(dir, 'kubelet.yaml');
    await writeFile(
      configFile,
      stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        staticPodPath: manifests,
        containerRuntimeEndpoint: bed().env.bed.endpoint,
        podLogsDir: join(dir, 'logs'),
        // The kubelet API away from 10250 (another test's kubelet may hold it); the pods are
        // read on its local socket below, as the healthz port serves /healthz only.
        port,
        healthzPort: 0,
        fileCheckFrequency: '1s',
        serializeImagePulls: false,
        maxParallelImagePulls: 2,
        registryPullQPS: 10,
        registryBurst: 20,
        nodeStatusMaxImages: 10,
      }),
    );
    await writeFile(
      join(manifests, 'two-registries.yaml'),
      stringify(
        podManifest('two-registries', {
          containers: [
            { name: 'open', image: openImage(), command: ['sleep', '3600'] },
            { name: 'private', image: privateImage(), command: ['sleep', '3600'] },
          ],
        }),
      ),
    );
    logFile = join(dir, 'tskubelet.log');
    proc = spawnTskubelet(
      ['run', '--config', configFile, '--root-dir', rootDir, '--hostname-override', 'itest-proc', '--v=3'],
      { logFile, cwd: dir },
    );
  });

  after(async () => {
    const p = proc;
    proc = undefined;
    await p?.stop();
  });

  void it('starts, accepts the settings without warnings and runs a pod pulled from both registries', async () => {
    const running = await untilLocalPodPhase(
      join(dir, 'root', 'tskubelet.sock'),
      'two-registries-itest-proc',
      'Running',
      { timeoutMs: 90_000, alive: async () => proc?.assertRunning(), describe: () => logFile },
    );
    assert.equal(running.status?.containerStatuses?.length, 2);
    const log = await readFile(logFile, 'utf8');
    assert.doesNotMatch(log, /is not implemented by tskubelet yet/);
    assert.match(log, /node registry credentials/);
    assert.ok(log.includes(join(dir, 'root', 'config.json')), 'the log names the credentials file');
  });
});
