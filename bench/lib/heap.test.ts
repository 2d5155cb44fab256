import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseEldHeap, parseGoHeap } from './heap.ts';

describe('heap readings', () => {
  it("reads the Go runtime's heap gauges from /metrics", () => {
    const text = [
      '# HELP go_memstats_heap_alloc_bytes Number of heap bytes allocated and still in use.',
      '# TYPE go_memstats_heap_alloc_bytes gauge',
      'go_memstats_heap_alloc_bytes 2.62144e+07',
      'go_memstats_heap_alloc_bytes_total 9.9e+09',
      'go_memstats_heap_inuse_bytes 3.145728e+07',
      '',
    ].join('\n');
    assert.deepEqual(parseGoHeap(text), { usedMiB: 25, totalMiB: 30 });
    assert.equal(parseGoHeap('go_memstats_heap_alloc_bytes 1\n'), undefined);
  });

  it("takes the probe's last line", () => {
    const lines = [
      JSON.stringify({ p99: 1, heapUsed: 10, heapTotal: 20 }),
      JSON.stringify({ p99: 2, heapUsed: 12, heapTotal: 21, rss: 110 }),
      '',
    ].join('\n');
    assert.deepEqual(parseEldHeap(lines), { usedMiB: 12, totalMiB: 21 });
    assert.equal(parseEldHeap(''), undefined);
    assert.equal(parseEldHeap('{"p99":1}\n'), undefined);
  });
});
