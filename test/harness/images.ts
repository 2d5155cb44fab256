/**
 * Local test images, built offline from Debian's busybox-static: one gzip layer holding
 * `/bin/busybox`, a symlink per applet and a minimal `/etc`, written as an OCI image layout tar and
 * imported with `ctr images import`. Tars are cached by content key so a second run only checks.
 */
import { createHash } from 'node:crypto';
import {
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
  chmod,
  copyFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../src/util/logger.ts';
import { nullLogger } from '../../src/util/logger.ts';
import { KubeletError } from '../../src/util/errors.ts';
import { run } from './exec.ts';

export const BUSYBOX_IMAGE = 'docker.io/library/busybox:1.29';
/** containerd 1.6's default `sandbox_image`. */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.6';

export const IMAGE_CACHE_DIR = '/var/cache/tskubelet-bed/images';
const BUSYBOX_BINARY = '/bin/busybox';
/** Bump when the image contents or layout change, so cached tars are rebuilt. */
const IMAGE_FORMAT_VERSION = 1;
const CRI_NAMESPACE = 'k8s.io';
const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const EPOCH = '1970-01-01T00:00:00Z';

const MT_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const MT_CONFIG = 'application/vnd.oci.image.config.v1+json';
const MT_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';
const MT_INDEX = 'application/vnd.oci.image.index.v1+json';

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

export interface BuiltImage {
  ref: string;
  /** OCI archive (layout tar) ready for `ctr images import` or `skopeo copy oci-archive:...`. */
  tarPath: string;
  /** Digest of the image manifest: what `ctr images ls` shows once imported. */
  manifestDigest: string;
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    // stat failing (ENOENT or otherwise) means we cannot use the path: treat as absent.
    return false;
  }
}

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

function safeName(ref: string): string {
  return ref.replace(/[^A-Za-z0-9_.-]+/g, '_');
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

/** Deterministic tar of `entries` (relative to `cwd`). */
async function tarDeterministic(cwd: string, out: string, entries: string[]): Promise<void> {
  await run(
    'tar',
    [
      '--sort=name',
      '--mtime=@0',
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--format=gnu',
      '-C',
      cwd,
      '-cf',
      out,
      ...[...entries].sort(),
    ],
    { timeoutMs: 60_000 },
  );
}

async function writeBlob(layoutDir: string, data: Buffer): Promise<{ digest: string; size: number }> {
  const hex = sha256(data);
  await writeFile(join(layoutDir, 'blobs/sha256', hex), data);
  return { digest: `sha256:${hex}`, size: data.length };
}

interface CacheRecord {
  ref: string;
  key: string;
  manifestDigest: string;
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
  const base = join(IMAGE_CACHE_DIR, `${safeName(spec.ref)}-${key}`);
  const tarPath = `${base}.tar`;
  const recordPath = `${base}.json`;
  if ((await exists(tarPath)) && (await exists(recordPath))) {
    try {
      const rec = JSON.parse(await readFile(recordPath, 'utf8')) as CacheRecord;
      if (rec.ref === spec.ref && rec.key === key && rec.manifestDigest.startsWith('sha256:')) {
        return { ref: spec.ref, tarPath, manifestDigest: rec.manifestDigest };
      }
    } catch (err) {
      logger.warn('test image cache record unreadable; rebuilding', { path: recordPath, err: String(err) });
    }
  }

  logger.info('building test image', { image: spec.ref, tar: tarPath });
  await mkdir(IMAGE_CACHE_DIR, { recursive: true });
  const work = await mkdtemp(join(IMAGE_CACHE_DIR, '.build-'));
  try {
    const rootfs = join(work, 'rootfs');
    const layout = join(work, 'layout');
    await mkdir(rootfs);
    await mkdir(join(layout, 'blobs/sha256'), { recursive: true });
    await writeRootfs(rootfs);

    const layerTar = join(work, 'layer.tar');
    await tarDeterministic(rootfs, layerTar, [
      'bin',
      'dev',
      'etc',
      'home',
      'proc',
      'root',
      'sbin',
      'sys',
      'tmp',
      'usr',
      'var',
    ]);
    const diffId = `sha256:${sha256(await readFile(layerTar))}`;
    await run('gzip', ['-n', '-f', layerTar], { timeoutMs: 60_000 });
    const layer = await writeBlob(layout, await readFile(`${layerTar}.gz`));

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
    );
    const manifest = await writeBlob(
      layout,
      Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: MT_MANIFEST,
          config: { mediaType: MT_CONFIG, ...config },
          layers: [{ mediaType: MT_LAYER, ...layer }],
        }),
      ),
    );
    const tag = spec.ref.slice(spec.ref.lastIndexOf(':') + 1);
    await writeFile(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    await writeFile(
      join(layout, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MT_INDEX,
        manifests: [
          {
            mediaType: MT_MANIFEST,
            ...manifest,
            platform: { architecture: ociArch(), os: 'linux' },
            annotations: { 'io.containerd.image.name': spec.ref, 'org.opencontainers.image.ref.name': tag },
          },
        ],
      }),
    );
    const tmpTar = join(work, 'image.tar');
    await tarDeterministic(layout, tmpTar, ['blobs', 'index.json', 'oci-layout']);
    await rename(tmpTar, tarPath);
    const rec: CacheRecord = { ref: spec.ref, key, manifestDigest: manifest.digest };
    await writeFile(`${recordPath}.tmp`, JSON.stringify(rec));
    await rename(`${recordPath}.tmp`, recordPath);
    return { ref: spec.ref, tarPath, manifestDigest: manifest.digest };
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
