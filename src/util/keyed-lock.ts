/**
 * One operation per key at a time, in arrival order (upstream pkg/util/keymutex, as the volume
 * plugins' `volumeLocks.LockKey(globalPath)` use it): a PV's set-up never overlaps its teardown in
 * this process. Keys no one waits on are forgotten.
 */

/** Runs `fn` once every earlier operation on `key` has settled; settles as `fn` does. */
export type KeyedLock = <T>(key: string, fn: () => Promise<T>) => Promise<T>;

export function createKeyedLock(): KeyedLock {
  const tails = new Map<string, Promise<void>>();
  return async <T>(key: string, fn: () => Promise<T>): Promise<T> => {
    const prev = tails.get(key) ?? Promise.resolve();
    let release = (): void => {};
    const mine = new Promise<void>((r) => (release = r));
    const chained = prev.then(() => mine);
    tails.set(key, chained);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (tails.get(key) === chained) tails.delete(key);
    }
  };
}
