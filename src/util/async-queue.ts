import { KubeletError } from './errors.ts';

/**
 * A bounded FIFO consumed by one `for await` loop. `push` never blocks: when full it returns false
 * and the item is dropped, so the producer decides what a drop means (the PLEG, for example, relies
 * on the next relist). `close` ends the iteration after the queued items.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  readonly #capacity: number;
  #waiter: ((r: IteratorResult<T>) => void) | undefined;
  #closed = false;

  constructor(capacity: number) {
    if (capacity <= 0) throw new KubeletError('InvalidArgument', 'AsyncQueue', 'capacity must be positive');
    this.#capacity = capacity;
  }

  get length(): number {
    return this.#items.length;
  }

  push(item: T): boolean {
    if (this.#closed) return false;
    const w = this.#waiter;
    if (w) {
      this.#waiter = undefined;
      w({ value: item, done: false });
      return true;
    }
    if (this.#items.length >= this.#capacity) return false;
    this.#items.push(item);
    return true;
  }

  close(): void {
    this.#closed = true;
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.#items.shift();
        if (item !== undefined) return Promise.resolve({ value: item, done: false });
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => {
          this.#waiter = resolve;
        });
      },
    };
  }
}
