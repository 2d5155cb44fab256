/**
 * OCI image layout archives as the beds write them (for `ctr images import` and `skopeo copy
 * oci-archive:`): content-addressed blobs, deterministic tars, and a cache of finished archives under
 * a content key, each beside a JSON record of its manifest digest. Builders rename results into
 * place, so concurrent builders are safe.
 */
import { createHash } from 'node:crypto';
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../src/util/logger.ts';
import { run } from './exec.ts';

export const EPOCH = '1970-01-01T00:00:00Z';
export const MT_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const MT_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const MT_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';
export const MT_INDEX = 'application/vnd.oci.image.index.v1+json';

export interface BuiltImage {
  ref: string;
  /** OCI archive (layout tar) ready for `ctr images import` or `skopeo copy oci-archive:...`. */
  tarPath: string;
  /** Digest of the image manifest: what `ctr images ls` shows once imported. */
  manifestDigest: string;
}

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

interface CacheRecord {
  ref: string;
  key: string;
  manifestDigest: string;
}

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false, // absent (or unreadable): not usable as a cache entry
  );
}

/** Deterministic tar (sorted, owner 0, mtime 0) of `entries`, relative to `cwd`. */
export async function deterministicTar(
  cwd: string,
  out: string,
  entries: readonly string[],
  timeoutMs: number,
): Promise<void> {
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
    { timeoutMs },
  );
}

/** Stores `data` under `blobs/sha256/` of the layout. */
export async function writeBlob(layout: string, data: Buffer, mediaType: string): Promise<Descriptor> {
  const hex = sha256(data);
  await writeFile(join(layout, 'blobs/sha256', hex), data);
  return { mediaType, digest: `sha256:${hex}`, size: data.length };
}

/** The archive and record paths of `ref` built under `key` in `cacheDir` (without extension). */
export function cacheStem(cacheDir: string, ref: string, key: string): string {
  return join(cacheDir, `${ref.replace(/[^A-Za-z0-9_.-]+/g, '_')}-${key}`);
}

/** The cached archive of `ref` under `key` at `stem`, if both it and a matching record are there. */
export async function cachedImage(
  stem: string,
  ref: string,
  key: string,
  logger: Logger,
): Promise<BuiltImage | undefined> {
  const tarPath = `${stem}.tar`;
  const recordPath = `${stem}.json`;
  if (!(await exists(tarPath)) || !(await exists(recordPath))) return undefined;
  try {
    const rec = JSON.parse(await readFile(recordPath, 'utf8')) as CacheRecord;
    if (rec.ref === ref && rec.key === key && rec.manifestDigest.startsWith('sha256:')) {
      return { ref, tarPath, manifestDigest: rec.manifestDigest };
    }
  } catch (err) {
    logger.warn('image cache record unreadable; rebuilding', { path: recordPath, err: String(err) });
  }
  return undefined;
}

/**
 * Finishes a layout whose blobs are written: its index.json (one manifest, named `ref`), the
 * archive of `entries` (relative to `layout`) renamed to `<stem>.tar` and the cache record to
 * `<stem>.json`. `work` holds the temporary archive.
 */
export async function packImage(opts: {
  layout: string;
  work: string;
  entries: readonly string[];
  ref: string;
  key: string;
  stem: string;
  manifest: Descriptor;
  architecture: string;
  timeoutMs: number;
}): Promise<BuiltImage> {
  const { layout, ref, manifest } = opts;
  const tag = ref.slice(ref.lastIndexOf(':') + 1);
  await writeFile(
    join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MT_INDEX,
      manifests: [
        {
          ...manifest,
          platform: { architecture: opts.architecture, os: 'linux' },
          annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': tag },
        },
      ],
    }),
  );
  const tarPath = `${opts.stem}.tar`;
  const tmp = join(opts.work, 'image.tar');
  await deterministicTar(layout, tmp, opts.entries, opts.timeoutMs);
  await rename(tmp, tarPath);
  const rec: CacheRecord = { ref, key: opts.key, manifestDigest: manifest.digest };
  await writeFile(`${opts.stem}.json.tmp`, JSON.stringify(rec));
  await rename(`${opts.stem}.json.tmp`, `${opts.stem}.json`);
  return { ref, tarPath, manifestDigest: manifest.digest };
}
