import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { KUBELET_DIR_MODE } from './private-dir.ts';
import { dirname } from 'node:path';
import type { Backoff } from './backoff.ts';
import { systemClock, wallAge, type Clock } from './clock.ts';
import type { Logger } from './logger.ts';
import { describeError } from './errors.ts';

/**
 * Keeps a Backoff table across kubelet restarts in one JSON file, so a crash-looping container
 * does not start over from the initial delay when the kubelet restarts. Writes are atomic (temp
 * file + rename) and skipped when nothing changed; an unreadable file is logged and ignored.
 *
 * The table's times are monotonic, which means nothing to another process: the file holds wall
 * times (the instant each entry was last updated), converted back at load through their age; a
 * time ahead of the wall clock (it stepped back in between) loads as just now.
 */
export interface BackoffStore {
  /** Puts back the entries a previous process saved (nothing saved yet: no-op). */
  load(): Promise<void>;
  /** Saves the table if it changed since the last load or save; never rejects (failures are logged). */
  save(): Promise<void>;
}

type Saved = Record<string, { delayMs: number; lastUpdateMs: number }>;

export function createBackoffStore(
  backoff: Backoff,
  file: string,
  log: Logger,
  clock: Clock = systemClock,
): BackoffStore {
  /** The table as last loaded or saved (monotonic times), to skip writes of an unchanged table. */
  let lastSaved = '';
  const snapshot = (): string => JSON.stringify(Object.fromEntries(backoff.entries()));
  return {
    async load() {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch {
        return; // first start: nothing saved
      }
      try {
        const data = JSON.parse(text) as Saved;
        const now = clock.now();
        const mono = clock.monotonic();
        for (const [k, v] of Object.entries(data)) {
          backoff.restore(k, v.delayMs, mono - wallAge(v.lastUpdateMs, now));
        }
        lastSaved = snapshot();
      } catch (err) {
        log.warn('ignoring unreadable back-off state', { file, err: describeError(err) });
      }
    },
    async save() {
      const current = snapshot();
      if (current === lastSaved) return;
      lastSaved = current;
      const now = clock.now();
      const mono = clock.monotonic();
      const data: Saved = {};
      for (const [k, e] of backoff.entries()) {
        data[k] = { delayMs: e.delayMs, lastUpdateMs: Math.round(now - (mono - e.lastUpdateMs)) };
      }
      try {
        await mkdir(dirname(file), { recursive: true, mode: KUBELET_DIR_MODE });
        await writeFile(`${file}.tmp`, JSON.stringify(data), { mode: 0o600 });
        await rename(`${file}.tmp`, file);
      } catch (err) {
        log.warn('failed to save container back-off state', { file, err: describeError(err) });
      }
    },
  };
}
