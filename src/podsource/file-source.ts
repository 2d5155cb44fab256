/**
 * The file source (upstream pkg/kubelet/config/file.go + file_linux.go): static pod manifests in a
 * directory (every regular file whose name does not start with `.`, in name order; subdirectories
 * are not entered) or one file.
 *
 * The whole path is re-read every `checkFrequencyMs` and, faster, ~100 ms after fs.watch reports a
 * change; the watch only triggers re-reads, so a lost event costs at most one period. Every re-read
 * sends a full snapshot; the storage turns repeats into no-ops.
 *
 * Failure handling, as upstream:
 * - path missing: an empty snapshot (the source counts as seen; pods from it are removed);
 * - a bad file in a directory: logged + reported, skipped; the other files are unaffected;
 * - two files defining the same namespace/name: the first in name order is used, the other reported;
 * - path is a single file that is bad, or the path cannot be read at all: nothing is sent, so the
 *   previous snapshot stays in force.
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { podFullName, type KubeletPod } from '../api/types.ts';
import { MAX_MANIFEST_BYTES } from '../config/defaults.ts';
import { describeError, errnoCode, KubeletError } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { singleFlight } from '../util/single-flight.ts';
import { decodePods } from './offload.ts';
import { createProblemLog } from './problem-log.ts';
import type { PodSource, SourceProblem } from './types.ts';

export interface FileSourceOptions {
  path: string;
  nodeName: string;
  checkFrequencyMs: number;
  logger: Logger;
  onProblem?: (p: SourceProblem) => void;
  /** Delay between a watch event and the re-read it triggers (coalesces bursts). Default 20 ms. */
  debounceMs?: number;
}

// Short: an atomic rename is one event; editors that write in several steps settle well within it.
const DEFAULT_DEBOUNCE_MS = 20;

/**
 * In a directory, only `*.yaml`, `*.yml` and `*.json` files are manifests, and dotfiles are ignored
 * (editor swap files, atomic-write temporaries). Upstream reads every non-dot file; limiting to the
 * manifest extensions keeps backups (`web.yaml~`, `web.yaml.orig`) from becoming reported problems.
 */
export function isManifestName(name: string): boolean {
  return !name.startsWith('.') && /\.(ya?ml|json)$/i.test(name);
}

type Outcome =
  | { kind: 'pod'; pod: KubeletPod }
  | { kind: 'problem'; problem: Omit<SourceProblem, 'source'> }
  | { kind: 'gone' };

export function createFileSource(opts: FileSourceOptions): PodSource {
  // Upstream trims trailing separators; the path is part of every UID, so keep it stable.
  const root = opts.path.length > 1 ? opts.path.replace(/\/+$/, '') : opts.path;
  const log = opts.logger.child({ source: 'file', path: root });
  const problems = createProblemLog('file', log, opts.onProblem);
  const debounceMs = opts.debounceMs ?? DEFAULT_DEBOUNCE_MS;

  let send: ((pods: KubeletPod[]) => void) | undefined;
  let stopped = false;
  let periodic: NodeJS.Timeout | undefined;
  let debounce: NodeJS.Timeout | undefined;
  let watcher: { w: FSWatcher; dir: string; ino: number } | undefined;
  const running = singleFlight<void>();
  let again = false;
  let missingLogged = false;

  async function readOne(file: string): Promise<Outcome> {
    let text: string;
    try {
      const st = await stat(file);
      if (st.size > MAX_MANIFEST_BYTES) {
        return {
          kind: 'problem',
          problem: {
            origin: file,
            reason: 'ReadFailed',
            message: `manifest is larger than ${MAX_MANIFEST_BYTES} bytes`,
          },
        };
      }
      text = await readFile(file, 'utf8');
    } catch (err) {
      // Deleted between listing and reading: not a problem, the file is simply gone.
      if (errnoCode(err) === 'ENOENT') return { kind: 'gone' };
      return {
        kind: 'problem',
        problem: { origin: file, reason: 'ReadFailed', message: describeError(err) },
      };
    }
    try {
      // A large manifest is decoded off the event loop (offload.ts).
      const [pod] = await decodePods(
        { kind: 'file', text, origin: file, nodeName: opts.nodeName },
        { logger: log },
      );
      if (!pod) throw new KubeletError('Internal', `decode ${file}`, 'the decoder returned no pod');
      return { kind: 'pod', pod };
    } catch (err) {
      return {
        kind: 'problem',
        problem: { origin: file, reason: 'InvalidManifest', message: describeError(err) },
      };
    }
  }

  /** Reads the path; returns the snapshot to send, or undefined to keep the previous one. */
  async function list(): Promise<KubeletPod[] | undefined> {
    let st;
    try {
      st = await stat(root);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') {
        if (!missingLogged)
          log.warn('Static pod path does not exist; will look again', { error: describeError(err) });
        else log.debug('Static pod path still does not exist');
        missingLogged = true;
        problems.retain(new Set());
        return [];
      }
      problems.report({ origin: root, reason: 'ReadFailed', message: describeError(err) });
      return undefined;
    }
    if (missingLogged) log.info('Static pod path exists now');
    missingLogged = false;

    if (st.isFile()) {
      const out = await readOne(root);
      problems.retain(new Set(out.kind === 'problem' ? [root] : []));
      if (out.kind === 'problem') problems.report(out.problem);
      return out.kind === 'pod' ? [out.pod] : undefined;
    }
    if (!st.isDirectory()) {
      problems.report({ origin: root, reason: 'ReadFailed', message: 'path is not a directory or file' });
      return undefined;
    }

    let names: string[];
    try {
      names = await readdir(root);
    } catch (err) {
      problems.report({ origin: root, reason: 'ReadFailed', message: describeError(err) });
      return undefined;
    }
    const pods: KubeletPod[] = [];
    const failing = new Set<string>();
    const byName = new Map<string, string>();
    for (const name of names.filter(isManifestName).sort()) {
      const file = join(root, name);
      let entry;
      try {
        entry = await stat(file);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT')
          log.warn('Could not get metadata of manifest', { origin: file, error: describeError(err) });
        continue;
      }
      if (entry.isDirectory()) {
        log.debug('Not recursing into subdirectory of the static pod path', { origin: file });
        continue;
      }
      if (!entry.isFile()) {
        log.debug('Manifest path is not a regular file, ignoring', { origin: file });
        continue;
      }
      const out = await readOne(file);
      if (out.kind === 'pod') {
        // Two files defining one namespace/name: the first in name order wins (upstream's store
        // would silently keep the last); the other file is reported with both paths.
        const fullName = podFullName(out.pod);
        const firstFile = byName.get(fullName);
        if (firstFile !== undefined) {
          failing.add(file);
          problems.report({
            origin: file,
            reason: 'DuplicatePod',
            message: `pod ${fullName} is already defined by ${firstFile}; ignoring this file`,
            pod: fullName,
          });
          continue;
        }
        byName.set(fullName, file);
        pods.push(out.pod);
      } else if (out.kind === 'problem') {
        failing.add(file);
        problems.report(out.problem);
      }
    }
    problems.retain(failing);
    return pods;
  }

  /**
   * (Re-)establishes the watch when missing or when the watched directory was replaced. A directory
   * is watched itself; a single file, or a path that does not exist yet, through its parent (so
   * atomic renames and the path's creation are seen).
   */
  async function ensureWatch(): Promise<void> {
    try {
      let dir = root;
      let filter: string | undefined;
      const st = await stat(root).catch((err: unknown) => {
        if (errnoCode(err) === 'ENOENT') return undefined;
        throw err;
      });
      if (!st?.isDirectory()) {
        dir = dirname(root);
        filter = basename(root);
      }
      const dirSt = await stat(dir);
      if (stopped || (watcher && watcher.dir === dir && watcher.ino === dirSt.ino)) return;
      closeWatch();
      const w = watch(dir, { persistent: false }, (_event, filename) => {
        const name = filename?.toString();
        if (name !== undefined && (filter !== undefined ? name !== filter : !isManifestName(name))) return;
        schedule();
      });
      w.on('error', (err) => {
        log.debug('Watch on static pod path failed; periodic re-reads continue until it is re-established', {
          error: describeError(err),
        });
        if (watcher?.w === w) closeWatch();
      });
      watcher = { w, dir, ino: dirSt.ino };
    } catch (err) {
      log.debug('Cannot watch static pod path yet; will retry at the next re-read', {
        error: describeError(err),
      });
    }
  }

  function closeWatch(): void {
    watcher?.w.close();
    watcher = undefined;
  }

  function schedule(): void {
    if (stopped || debounce) return;
    debounce = setTimeout(() => {
      debounce = undefined;
      relist();
    }, debounceMs);
  }

  /** Runs one re-read now, or right after the one in flight (never two at once: snapshots stay ordered). */
  function relist(): void {
    if (stopped) return;
    if (running.busy) {
      again = true;
      return;
    }
    void running.run(async () => {
      do {
        again = false;
        // Watch first, then read: a change made after the read started is then always seen.
        await ensureWatch();
        let snapshot: KubeletPod[] | undefined;
        try {
          snapshot = await list();
        } catch (err) {
          log.error('Unable to read static pod path', { error: describeError(err) });
        }
        if (stopped) return;
        if (snapshot) send?.(snapshot);
      } while (again && !stopped);
    });
  }

  return {
    name: 'file',
    start(s) {
      if (send) throw new KubeletError('FailedPrecondition', 'start file source', 'already started');
      send = s;
      log.info('Watching static pod path', { checkFrequencyMs: opts.checkFrequencyMs });
      relist();
      periodic = setInterval(relist, opts.checkFrequencyMs);
    },
    async stop() {
      stopped = true;
      clearInterval(periodic);
      clearTimeout(debounce);
      debounce = undefined;
      closeWatch();
      await running.idle();
    },
  };
}
