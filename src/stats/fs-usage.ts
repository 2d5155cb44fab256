/**
 * Filesystem numbers without forking: capacity from statfs(2), and disk usage of a directory tree
 * by a bounded in-process walk (what upstream gets from `du` and `find`).
 */
import { lstat, opendir, readFile, statfs } from 'node:fs/promises';
import path from 'node:path';

export interface FsCapacity {
  capacityBytes: number;
  availableBytes: number;
  usedBytes: number;
  inodes: number;
  inodesFree: number;
  inodesUsed: number;
}

/** statfs of the filesystem holding `dir` (cadvisor's numbers: used = blocks − free blocks). */
export async function fsCapacity(dir: string): Promise<FsCapacity> {
  const s = await statfs(dir);
  return {
    capacityBytes: s.blocks * s.bsize,
    availableBytes: s.bavail * s.bsize,
    usedBytes: (s.blocks - s.bfree) * s.bsize,
    inodes: s.files,
    inodesFree: s.ffree,
    inodesUsed: s.files - s.ffree,
  };
}

export interface DiskUsage {
  /** Allocated bytes (st_blocks × 512), each inode counted once, as `du -s -B1 -x`. */
  usedBytes: number;
  /** Entries, the root included, as `find -xdev | wc -l`. */
  inodesUsed: number;
  /** The walk stopped at its entry limit: the numbers are a lower bound. */
  truncated: boolean;
}

export interface WalkLimits {
  /** Stop after this many entries (default 100 000). */
  maxEntries?: number;
  /** lstat calls in flight at once (default 16). */
  concurrency?: number;
}

/**
 * Disk usage of the tree at `root`, staying on its filesystem, not following symlinks. Entries that
 * vanish during the walk are skipped. Rejects only when `root` itself cannot be read.
 */
export async function diskUsage(root: string, limits: WalkLimits = {}): Promise<DiskUsage> {
  const maxEntries = limits.maxEntries ?? 100_000;
  const concurrency = limits.concurrency ?? 16;
  const top = await lstat(root);
  const seen = new Set<string>();
  let usedBytes = 0;
  let inodesUsed = 0;
  let truncated = false;

  const count = (s: { dev: number; ino: number; blocks: number; nlink: number }): void => {
    inodesUsed++;
    if (s.nlink > 1) {
      const key = `${s.dev}:${s.ino}`;
      if (seen.has(key)) return;
      seen.add(key);
    }
    usedBytes += s.blocks * 512;
  };
  count(top);
  if (!top.isDirectory()) return { usedBytes, inodesUsed, truncated };

  const dirs: string[] = [root];
  while (dirs.length > 0 && !truncated) {
    const dir = dirs.pop() ?? root;
    let names: string[];
    try {
      names = [];
      for await (const e of await opendir(dir)) names.push(e.name);
    } catch {
      // Removed or unreadable meanwhile (a volume being torn down): its own inode is counted already.
      continue;
    }
    for (let i = 0; i < names.length; i += concurrency) {
      if (inodesUsed >= maxEntries) {
        truncated = true;
        break;
      }
      const batch = names.slice(i, i + concurrency).map((n) => path.join(dir, n));
      const stats = await Promise.all(batch.map((p) => lstat(p).catch(() => undefined)));
      stats.forEach((s, j) => {
        if (!s || s.dev !== top.dev) return; // vanished, or another filesystem (-x)
        count(s);
        if (s.isDirectory()) dirs.push(batch[j] ?? '');
      });
    }
  }
  return { usedBytes, inodesUsed, truncated };
}

/** Mount points and their sources from /proc/self/mountinfo, for the `device` label of fs metrics. */
export function parseMountinfo(text: string): { mountPoint: string; source: string }[] {
  const out: { mountPoint: string; source: string }[] = [];
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const before = line.slice(0, sep).split(' ');
    const after = line.slice(sep + 3).split(' ');
    const unescape = (s: string) =>
      s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    out.push({ mountPoint: unescape(before[4] ?? ''), source: unescape(after[1] ?? '') });
  }
  return out;
}

/** The source device of the mount holding `p` (longest mount point prefix), or undefined. */
export function deviceOf(mounts: { mountPoint: string; source: string }[], p: string): string | undefined {
  let best: { mountPoint: string; source: string } | undefined;
  for (const m of mounts) {
    const inside =
      p === m.mountPoint || p.startsWith(m.mountPoint.endsWith('/') ? m.mountPoint : `${m.mountPoint}/`);
    if (inside && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m;
  }
  return best?.source;
}

export async function readMountinfo(procRoot: string): Promise<{ mountPoint: string; source: string }[]> {
  return parseMountinfo(await readFile(path.join(procRoot, 'self/mountinfo'), 'utf8'));
}
