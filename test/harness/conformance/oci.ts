/**
 * Images layered on the bed's busybox image: its layer unchanged (shared by every image, so
 * containerd and the registry store it once) plus one layer of extra files (test binaries, shared
 * libraries, certificates), written as an OCI image layout tar for `ctr images import` and
 * `skopeo copy oci-archive:`. Deterministic: the same inputs give the same digests, and archives are
 * cached under a key of everything that goes into them.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { KubeletError } from '../../../src/util/errors.ts';
import { run } from '../exec.ts';
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
  type Descriptor,
} from '../oci-layout.ts';

const FORMAT_VERSION = 1;
const TAR_TIMEOUT_MS = 120_000;

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

interface ImageConfig {
  config: Record<string, unknown>;
  rootfs: { type: string; diff_ids: string[] };
  history?: unknown[];
  [k: string]: unknown;
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

async function readJson<T>(path: string): Promise<T> {
  return JSON.parse(await readFile(path, 'utf8')) as T;
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
  const stem = cacheStem(cacheDir, spec.ref, key);
  const cached = await cachedImage(stem, spec.ref, key, logger);
  if (cached) return cached;
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
      await deterministicTar(root, layerTar, tops, TAR_TIMEOUT_MS);
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
    const arch = typeof config.architecture === 'string' ? config.architecture : 'amd64';
    // Only blobs the new manifest references (the base's old config and manifest are not).
    const keep = new Set([cfg, manifest, ...layers].map((d) => d.digest.replace(/^sha256:/, '')));
    return await packImage({
      layout,
      work,
      entries: ['oci-layout', 'index.json', ...[...keep].map((h) => `blobs/sha256/${h}`)],
      ref: spec.ref,
      key,
      stem,
      manifest,
      architecture: arch,
      timeoutMs: TAR_TIMEOUT_MS,
    });
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
