import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Backoff } from './backoff.ts';
import type { Logger } from './logger.ts';
import { describeError } from './errors.ts';

/**
 * Keeps a Backoff table across kubelet restarts in one JSON file, so a crash-looping container
 * does not start over from the initial delay when the kubelet restarts. Writes are atomic (temp
 * file + rename) and skipped when nothing changed; an unreadable file is logged and ignored.
 */
export interface BackoffStore {
  /** Puts back the entries a previous process saved (nothing saved yet: no-op). */
  load(): Promise<void>;
  /** Saves the table if it changed since the last load or save; never rejects (failures are logged). */
  save(): Promise<void>;
}

export function createBackoffStore(backoff: Backoff, file: string, log: Logger): BackoffStore {
  let lastSaved = '';
  return {
    async load() {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch {
        return; // first start: nothing saved
      }
      try {
        const data = JSON.parse(text) as Record<string, { delayMs: number; lastUpdateMs: number }>;
        for (const [k, v] of Object.entries(data)) backoff.restore(k, v.delayMs, v.lastUpdateMs);
        lastSaved = text;
      } catch (err) {
        log.warn('ignoring unreadable back-off state', { file, err: describeError(err) });
      }
    },
    async save() {
      const data = JSON.stringify(Object.fromEntries(backoff.entries()));
      if (data === lastSaved) return;
      lastSaved = data;
      try {
        await mkdir(dirname(file), { recursive: true });
        await writeFile(`${file}.tmp`, data);
        await rename(`${file}.tmp`, file);
      } catch (err) {
        log.warn('failed to save container back-off state', { file, err: describeError(err) });
      }
    },
  };
}
