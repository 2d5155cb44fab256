/**
 * Images layered on the bed's busybox image: its layer unchanged (shared by every image, so
 * containerd and the registry store it once) plus one layer of extra files (test binaries, shared
 * libraries, certificates), written as an OCI image layout tar for `ctr images import` and
 * `skopeo copy oci-archive:`. Deterministic: the same inputs give the same digests, and archives are
 * cached under a key of everything that goes into them.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import {
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError } from '../../../src/util/errors.ts';
import { run } from '../exec.ts';
import type { BuiltImage } from '../images.ts';

const FORMAT_VERSION = 1;
const EPOCH = '1970-01-01T00:00:00Z';
const MT_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const MT_CONFIG = 'application/vnd.oci.image.config.v1+json';
const MT_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';
const MT_INDEX = 'application/vnd.oci.image.index.v1+json';

/** One entry of the extra layer, at an absolute path inside the image. */
export type LayerFile =
  | { path: string; kind: 'copy'; source: string; mode: number }
  | { path: string; kind: 'text'; content: string; mode: number }
  | { path: string; kind: 'symlink'; target: string }
  | { path: string; kind: 'dir'; mode: number };

export interface LayeredImageSpec {
  /** The reference written into the archive (what `ctr images import` names it). */
  ref: string;
  files: readonly LayerFile[];
  /** Replace the base's; an entrypoint without cmd clears the base's cmd, as a Dockerfile does. */
  entrypoint?: string[];
  cmd?: string[];
  user?: string;
  workingDir?: string;
}

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

interface ImageConfig {
  config: Record<string, unknown>;
  rootfs: { type: string; diff_ids: string[] };
  history?: unknown[];
  [k: string]: unknown;
}

function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

function fileSha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (d) => h.update(d))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', (err) =>
        reject(new KubeletError('NotFound', 'build e2e image', `cannot read ${path}`, { cause: err })),
      );
  });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false, // absent (or unreadable): not usable as a cache entry
  );
}

async function readJson<T>(path: string): Promise<T> {
  return JSON.parse(await readFile(path, 'utf8')) as T;
}

function deterministicTar(cwd: string, out: string, entries: string[]): Promise<unknown> {
  return run(
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
      ...entries.sort(),
    ],
    { timeoutMs: 120_000 },
  );
}

/** The base archive unpacked: its layout dir, manifest and config. */
async function unpackBase(
  baseTar: string,
  into: string,
): Promise<{ layers: Descriptor[]; config: ImageConfig }> {
  await mkdir(into, { recursive: true });
  await run('tar', ['-xf', baseTar, '-C', into], { timeoutMs: 60_000 });
  const index = await readJson<{ manifests: Descriptor[] }>(join(into, 'index.json'));
  const md = index.manifests[0];
  if (!md) throw new KubeletError('Internal', 'build e2e image', `${baseTar} has an empty index`);
  const blob = (d: Descriptor): string => join(into, 'blobs/sha256', d.digest.replace(/^sha256:/, ''));
  const manifest = await readJson<{ config: Descriptor; layers: Descriptor[] }>(blob(md));
  return { layers: manifest.layers, config: await readJson<ImageConfig>(blob(manifest.config)) };
}

async function stage(root: string, files: readonly LayerFile[]): Promise<string[]> {
  const tops = new Set<string>();
  // Directories first (and parents as plain 0755 dirs), so modes set later are not overwritten.
  for (const f of [...files].sort((a, b) => a.path.localeCompare(b.path))) {
    const rel = f.path.replace(/^\/+/, '');
    tops.add(rel.split('/')[0] ?? rel);
    const dest = join(root, rel);
    await mkdir(dirname(dest), { recursive: true, mode: 0o755 });
    switch (f.kind) {
      case 'dir':
        await mkdir(dest, { recursive: true });
        await chmod(dest, f.mode);
        break;
      case 'copy':
        await copyFile(f.source, dest);
        await chmod(dest, f.mode);
        break;
      case 'text':
        await writeFile(dest, f.content);
        await chmod(dest, f.mode);
        break;
      case 'symlink':
        await symlink(f.target, dest);
        break;
    }
  }
  return [...tops];
}

async function writeBlob(layout: string, data: Buffer, mediaType: string): Promise<Descriptor> {
  const hex = sha256(data);
  await writeFile(join(layout, 'blobs/sha256', hex), data);
  return { mediaType, digest: `sha256:${hex}`, size: data.length };
}

/** The content key: the format, the base, the spec and the bytes of every copied file. */
async function cacheKey(spec: LayeredImageSpec, base: BuiltImage): Promise<string> {
  const sources: string[] = [];
  for (const f of spec.files) if (f.kind === 'copy') sources.push(await fileSha256(f.source));
  return sha256(JSON.stringify({ v: FORMAT_VERSION, base: base.manifestDigest, spec, sources })).slice(0, 20);
}

/**
 * Builds (or finds in `cacheDir`) the archive of `spec` on top of `base` (an archive `buildImage()`
 * wrote). Safe against concurrent builders: results are renamed into place.
 */
export async function buildLayeredImage(
  spec: LayeredImageSpec,
  base: BuiltImage,
  cacheDir: string,
  logger: Logger,
): Promise<BuiltImage> {
  const key = await cacheKey(spec, base);
  const stem = join(cacheDir, `${spec.ref.replace(/[^A-Za-z0-9_.-]+/g, '_')}-${key}`);
  const tarPath = `${stem}.tar`;
  if ((await exists(tarPath)) && (await exists(`${stem}.json`))) {
    const rec = await readJson<{ manifestDigest: string }>(`${stem}.json`).catch(() => undefined);
    if (rec?.manifestDigest.startsWith('sha256:'))
      return { ref: spec.ref, tarPath, manifestDigest: rec.manifestDigest };
  }
  logger.info('building e2e image', { image: spec.ref });
  await mkdir(cacheDir, { recursive: true });
  const work = await mkdtemp(join(cacheDir, '.build-'));
  try {
    const layout = join(work, 'layout');
    const { layers, config } = await unpackBase(base.tarPath, layout);
    if (spec.files.length > 0) {
      const root = join(work, 'rootfs');
      const tops = await stage(root, spec.files);
      const layerTar = join(work, 'layer.tar');
      await deterministicTar(root, layerTar, tops);
      config.rootfs.diff_ids.push(`sha256:${await fileSha256(layerTar)}`);
      await run('gzip', ['-n', '-f', layerTar], { timeoutMs: 120_000 });
      layers.push(await writeBlob(layout, await readFile(`${layerTar}.gz`), MT_LAYER));
      config.history = [
        ...(config.history ?? []),
        { created: EPOCH, created_by: `tskubelet conformance harness: ${spec.ref}` },
      ];
    }
    const c = { ...config.config };
    if (spec.entrypoint) {
      c.Entrypoint = spec.entrypoint;
      if (!spec.cmd) delete c.Cmd;
    }
    if (spec.cmd) c.Cmd = spec.cmd;
    if (spec.user !== undefined) c.User = spec.user;
    if (spec.workingDir !== undefined) c.WorkingDir = spec.workingDir;
    const cfg = await writeBlob(layout, Buffer.from(JSON.stringify({ ...config, config: c })), MT_CONFIG);
    const manifest = await writeBlob(
      layout,
      Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MT_MANIFEST, config: cfg, layers })),
      MT_MANIFEST,
    );
    const tag = spec.ref.slice(spec.ref.lastIndexOf(':') + 1);
    const arch = typeof config.architecture === 'string' ? config.architecture : 'amd64';
    await writeFile(
      join(layout, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        mediaType: MT_INDEX,
        manifests: [
          {
            ...manifest,
            platform: { architecture: arch, os: 'linux' },
            annotations: { 'io.containerd.image.name': spec.ref, 'org.opencontainers.image.ref.name': tag },
          },
        ],
      }),
    );
    // Only blobs the new manifest references (the base's old config and manifest are not).
    const keep = new Set([cfg, manifest, ...layers].map((d) => d.digest.replace(/^sha256:/, '')));
    const blobs = [...keep].map((h) => `blobs/sha256/${h}`);
    const tmp = join(work, 'image.tar');
    await deterministicTar(layout, tmp, ['oci-layout', 'index.json', ...blobs]);
    await rename(tmp, tarPath);
    await writeFile(
      `${stem}.json.tmp`,
      JSON.stringify({ ref: spec.ref, key, manifestDigest: manifest.digest }),
    );
    await rename(`${stem}.json.tmp`, `${stem}.json`);
    return { ref: spec.ref, tarPath, manifestDigest: manifest.digest };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * `binary` and the shared libraries `ldd` resolves for it, as layer files at the paths the dynamic
 * loader looks for (the image has no merged /usr: /lib and /lib64 are real directories there).
 */
export async function withSharedLibraries(binary: string, imagePath: string): Promise<LayerFile[]> {
  const { stdout } = await run('ldd', [binary], { timeoutMs: 10_000 });
  const out: LayerFile[] = [{ path: imagePath, kind: 'copy', source: binary, mode: 0o755 }];
  for (const line of stdout.split('\n')) {
    const t = line.trim();
    if (t === '' || t.startsWith('linux-vdso')) continue;
    if (t.includes('not found')) {
      throw new KubeletError(
        'NotFound',
        `libraries of ${binary}`,
        `ldd: ${t} (install the package that provides it)`,
      );
    }
    const m = /=>\s*(\/\S+)/.exec(t) ?? /^(\/\S+)/.exec(t);
    if (m?.[1]) out.push({ path: m[1], kind: 'copy', source: m[1], mode: 0o755 });
  }
  return out;
}
