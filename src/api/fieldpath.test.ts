import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { downwardAllocatable, downwardPod } from './testing.ts';
import { containerResourceValue, formatMap, podFieldValue } from './fieldpath.ts';
import { goQuote } from '../util/go-quote.ts';

const pod = downwardPod;
const allocatable = downwardAllocatable;

describe('downward API values', () => {
  it('quotes like Go %q', () => {
    assert.equal(goQuote('plain'), '"plain"');
    assert.equal(goQuote('a"b\\c\n\t'), '"a\\"b\\\\c\\n\\t"');
    assert.equal(goQuote('\x00\x7f'), '"\\x00\\x7f"');
    assert.equal(goQuote('héllo ✓'), '"héllo ✓"');
    assert.equal(goQuote('\u200b'), '"\\u200b"');
  });

  it('formats labels and annotations as sorted key="value" lines without a trailing newline', () => {
    assert.equal(formatMap(pod.metadata.labels), 'app="web"\ntier="front"');
    assert.equal(formatMap(undefined), '');
    assert.equal(podFieldValue(pod, 'metadata.annotations'), 'Build="7"\nexample.com/note="say \\"hi\\"\\n"');
  });

  it('reads the metadata fields a volume may name, including subscripted labels and annotations', () => {
    assert.equal(podFieldValue(pod, 'metadata.name'), 'web');
    assert.equal(podFieldValue(pod, 'metadata.namespace'), 'shop');
    assert.equal(podFieldValue(pod, 'metadata.uid'), 'u-1');
    assert.equal(podFieldValue(pod, "metadata.labels['tier']"), 'front');
    assert.equal(podFieldValue(pod, "metadata.labels['absent']"), '');
    assert.equal(podFieldValue(pod, "metadata.annotations['Build']"), '7');
    assert.throws(() => podFieldValue(pod, 'spec.nodeName'), /unsupported fieldPath/);
    assert.throws(() => podFieldValue(pod, "metadata.name['x']"), /does not support subscript/);
    assert.throws(() => podFieldValue(pod, "metadata.labels['bad key!']"), /invalid key subscript/);
  });

  it('divides resources by the divisor and rounds up', () => {
    assert.equal(containerResourceValue(pod, 'app', 'limits.cpu', undefined, allocatable), '1');
    assert.equal(containerResourceValue(pod, 'app', 'limits.cpu', '1m', allocatable), '250');
    assert.equal(containerResourceValue(pod, 'app', 'requests.cpu', '1m', allocatable), '100');
    assert.equal(
      containerResourceValue(pod, 'app', 'limits.memory', undefined, allocatable),
      String(64 * 2 ** 20),
    );
    assert.equal(containerResourceValue(pod, 'app', 'limits.memory', '1Mi', allocatable), '64');
    assert.equal(containerResourceValue(pod, 'app', 'limits.memory', '1G', allocatable), '1');
    assert.equal(containerResourceValue(pod, 'init', 'requests.memory', '1Mi', allocatable), '1024');
  });

  it('reads an unset limit as node allocatable and an unset request as 0', () => {
    assert.equal(containerResourceValue(pod, 'bare', 'limits.cpu', undefined, allocatable), '4');
    assert.equal(containerResourceValue(pod, 'bare', 'limits.memory', '1Gi', allocatable), '8');
    assert.equal(containerResourceValue(pod, 'bare', 'limits.ephemeral-storage', '1Gi', allocatable), '100');
    assert.equal(containerResourceValue(pod, 'bare', 'requests.memory', undefined, allocatable), '0');
  });

  it('rejects unknown containers and resources', () => {
    assert.throws(
      () => containerResourceValue(pod, 'nope', 'limits.cpu', undefined, allocatable),
      /not found/,
    );
    assert.throws(
      () => containerResourceValue(pod, 'app', 'limits.gpu', undefined, allocatable),
      /unsupported/,
    );
  });
});
