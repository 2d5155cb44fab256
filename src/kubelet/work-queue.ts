/**
 * Pods due for a sync at a given time (upstream queue.WorkQueue). The sync loop's 1 s tick takes the
 * due ones. One entry per UID: re-enqueueing moves its due time. Due times are on the monotonic
 * clock (upstream's clock.Now() readings carry one): a wall step neither holds syncs back nor makes
 * them all due at once.
 */
export interface WorkQueue {
  enqueue(uid: string, delayMs: number): void;
  /** Removes and returns every UID due at `nowMs` (monotonic ms). */
  takeDue(nowMs: number): string[];
  remove(uid: string): void;
  /** The earliest due time, if any (for tests). */
  size(): number;
}

export function createWorkQueue(monotonic: () => number): WorkQueue {
  const due = new Map<string, number>();
  return {
    enqueue(uid, delayMs) {
      due.set(uid, monotonic() + delayMs);
    },
    takeDue(nowMs) {
      const out: string[] = [];
      for (const [uid, t] of due) {
        if (t <= nowMs) {
          out.push(uid);
          due.delete(uid);
        }
      }
      return out;
    },
    remove(uid) {
      due.delete(uid);
    },
    size: () => due.size,
  };
}
