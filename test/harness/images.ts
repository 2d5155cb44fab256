/**
 * Local test images, built offline from Debian's busybox-static: one gzip layer holding
 * `/bin/busybox`, a symlink per applet and a minimal `/etc`, written as an OCI image layout tar and
 * imported with `ctr images import`. Tars are cached by content key so a second run only checks.
 */
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile, chmod, copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../src/util/logger.ts';
import { nullLogger } from '../../src/util/logger.ts';
import { KubeletError } from '../../src/util/errors.ts';
import { run } from './exec.ts';
import {
  EPOCH,
  MT_CONFIG,
  MT_LAYER,
  MT_MANIFEST,
  cacheStem,
  cachedImage,
  deterministicTar,
  packImage,
  sha256,
  writeBlob,
  type BuiltImage,
} from './oci-layout.ts';

export type { BuiltImage } from './oci-layout.ts';

export const BUSYBOX_IMAGE = 'docker.io/library/busybox:1.29';
/** containerd 1.6's default `sandbox_image`. */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.6';

export const IMAGE_CACHE_DIR = '/var/cache/tskubelet-bed/images';
const BUSYBOX_BINARY = '/bin/busybox';
/** Bump when the image contents or layout change, so cached tars are rebuilt. */
const IMAGE_FORMAT_VERSION = 1;
const CRI_NAMESPACE = 'k8s.io';
const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface ImageSpec {
  /** Full reference, e.g. `docker.io/library/busybox:1.29`. */
  ref: string;
  entrypoint?: string[];
  cmd?: string[];
}

/** The images every test bed carries. */
export const BED_IMAGES: readonly ImageSpec[] = [
  { ref: BUSYBOX_IMAGE, cmd: ['sh'] },
  {
    ref: PAUSE_IMAGE,
    // As pid 1 a signal without a handler is ignored: the trap is what makes SIGTERM end it.
    entrypoint: ['/bin/sh', '-c', "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"],
  },
];

function ociArch(): string {
  switch (process.arch) {
    case 'x64':
      return 'amd64';
    case 'ia32':
      return '386';
    default:
      return process.arch; // arm64, arm, s390x, ppc64 match the OCI names
  }
}

/** The rootfs shared by every bed image. */
async function writeRootfs(dir: string): Promise<void> {
  const { stdout } = await run(BUSYBOX_BINARY, ['--list'], { timeoutMs: 10_000 });
  const applets = stdout
    .split('\n')
    .map((s) => s.trim())
    .filter((s) => s !== '' && s !== 'busybox' && !s.includes('/'));
  for (const d of [
    'bin',
    'dev',
    'etc',
    'home',
    'proc',
    'root',
    'sys',
    'tmp',
    'usr',
    'var',
    'var/www',
    'var/tmp',
  ]) {
    await mkdir(join(dir, d), { recursive: true });
  }
  await copyFile(BUSYBOX_BINARY, join(dir, 'bin/busybox'));
  await chmod(join(dir, 'bin/busybox'), 0o755);
  for (const a of applets) await symlink('busybox', join(dir, 'bin', a));
  // A merged-/usr layout, so `/usr/bin/env` or `/sbin/ip` in a command work too.
  await symlink('bin', join(dir, 'sbin'));
  await symlink('../bin', join(dir, 'usr/bin'));
  await symlink('../bin', join(dir, 'usr/sbin'));
  await writeFile(
    join(dir, 'etc/passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n',
  );
  await writeFile(join(dir, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
  await writeFile(join(dir, 'var/www/index.html'), 'tskubelet test bed\n');
  for (const d of ['bin', 'dev', 'etc', 'home', 'proc', 'sys', 'usr', 'var', 'var/www'])
    await chmod(join(dir, d), 0o755);
  await chmod(join(dir, 'root'), 0o700);
  await chmod(join(dir, 'tmp'), 0o1777);
  await chmod(join(dir, 'var/tmp'), 0o1777);
  for (const f of ['etc/passwd', 'etc/group', 'var/www/index.html']) await chmod(join(dir, f), 0o644);
}

/** Content key: harness format version, the busybox binary, and the image's own spec. */
async function cacheKey(spec: ImageSpec): Promise<string> {
  const busybox = await readFile(BUSYBOX_BINARY).catch((err: unknown) => {
    throw new KubeletError(
      'NotFound',
      'build test image',
      `${BUSYBOX_BINARY} missing (install busybox-static)`,
      {
        cause: err,
      },
    );
  });
  return sha256(
    JSON.stringify({ v: IMAGE_FORMAT_VERSION, busybox: sha256(busybox), arch: ociArch(), spec }),
  ).slice(0, 20);
}

/**
 * Builds (or finds in the cache) the OCI archive for `spec`. Idempotent; concurrent builders are
 * safe because results are renamed into place.
 */
export async function buildImage(spec: ImageSpec, logger: Logger = nullLogger): Promise<BuiltImage> {
  const key = await cacheKey(spec);
  const stem = cacheStem(IMAGE_CACHE_DIR, spec.ref, key);
  const cached = await cachedImage(stem, spec.ref, key, logger);
  if (cached) return cached;

  logger.info('building test image', { image: spec.ref, tar: `${stem}.tar` });
  await mkdir(IMAGE_CACHE_DIR, { recursive: true });
  const work = await mkdtemp(join(IMAGE_CACHE_DIR, '.build-'));
  try {
    const rootfs = join(work, 'rootfs');
    const layout = join(work, 'layout');
    await mkdir(rootfs);
    await mkdir(join(layout, 'blobs/sha256'), { recursive: true });
    await writeRootfs(rootfs);

    const layerTar = join(work, 'layer.tar');
    await deterministicTar(
      rootfs,
      layerTar,
      ['bin', 'dev', 'etc', 'home', 'proc', 'root', 'sbin', 'sys', 'tmp', 'usr', 'var'],
      60_000,
    );
    const diffId = `sha256:${sha256(await readFile(layerTar))}`;
    await run('gzip', ['-n', '-f', layerTar], { timeoutMs: 60_000 });
    const layer = await writeBlob(layout, await readFile(`${layerTar}.gz`), MT_LAYER);

    const imageConfig: Record<string, unknown> = { Env: [PATH_ENV] };
    if (spec.entrypoint) imageConfig.Entrypoint = spec.entrypoint;
    if (spec.cmd) imageConfig.Cmd = spec.cmd;
    const config = await writeBlob(
      layout,
      Buffer.from(
        JSON.stringify({
          created: EPOCH,
          architecture: ociArch(),
          os: 'linux',
          config: imageConfig,
          rootfs: { type: 'layers', diff_ids: [diffId] },
          history: [{ created: EPOCH, created_by: 'tskubelet test harness (busybox-static)' }],
        }),
      ),
      MT_CONFIG,
    );
    const manifest = await writeBlob(
      layout,
      Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: MT_MANIFEST,
          config,
          layers: [layer],
        }),
      ),
      MT_MANIFEST,
    );
    await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    return await packImage({
      layout,
      work,
      entries: ['blobs', 'index.json', 'oci-layout'],
      ref: spec.ref,
      key,
      stem,
      manifest,
      architecture: ociArch(),
      timeoutMs: 60_000,
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** `ctr images ls` in the CRI namespace → reference → target digest. */
export async function listImages(socket: string): Promise<Map<string, string>> {
  const { stdout } = await run('ctr', ['--address', socket, '--namespace', CRI_NAMESPACE, 'images', 'ls'], {
    timeoutMs: 20_000,
  });
  const out = new Map<string, string>();
  for (const line of stdout.split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    const [ref, , digest] = cols;
    if (ref && digest?.startsWith('sha256:')) out.set(ref, digest);
  }
  return out;
}

/** Imports every bed image whose reference is missing or points at another digest. */
export async function ensureImages(socket: string, logger: Logger = nullLogger): Promise<BuiltImage[]> {
  const built = await Promise.all(BED_IMAGES.map((spec) => buildImage(spec, logger)));
  const present = await listImages(socket);
  for (const img of built) {
    if (present.get(img.ref) === img.manifestDigest) continue;
    logger.info('importing test image', { image: img.ref, digest: img.manifestDigest });
    await run('ctr', ['--address', socket, '--namespace', CRI_NAMESPACE, 'images', 'import', img.tarPath], {
      timeoutMs: 120_000,
    });
  }
  const after = await listImages(socket);
  for (const img of built) {
    if (after.get(img.ref) !== img.manifestDigest) {
      throw new KubeletError(
        'Internal',
        `import ${img.ref}`,
        `after import ctr lists ${after.get(img.ref) ?? 'nothing'}, expected ${img.manifestDigest}`,
      );
    }
  }
  return built;
}
