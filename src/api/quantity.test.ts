import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { canonicalQuantity, formatQuantity } from './quantity-format.ts';
import { milliCPU, parseQuantity } from './quantity.ts';

describe('parseQuantity', () => {
  const valid: [string, number][] = [
    ['0', 0],
    ['1', 1],
    ['+1', 1],
    ['-1', -1],
    ['1.5', 1.5],
    ['.5', 0.5],
    ['5.', 5],
    ['100m', 0.1],
    ['250m', 0.25],
    ['1n', 1e-9],
    ['1u', 1e-6],
    ['1k', 1e3],
    ['1M', 1e6],
    ['1G', 1e9],
    ['1T', 1e12],
    ['1P', 1e15],
    ['1E', 1e18],
    ['1Ki', 1024],
    ['1Mi', 1024 ** 2],
    ['64Mi', 64 * 1024 ** 2],
    ['1Gi', 1024 ** 3],
    ['0.5Gi', 512 * 1024 ** 2],
    ['1Ti', 1024 ** 4],
    ['1Pi', 1024 ** 5],
    ['1Ei', 1024 ** 6],
    ['129e6', 129e6],
    ['1e3', 1000],
    ['1E3', 1000],
    ['1e-3', 0.001],
    ['12E+2', 1200],
  ];
  for (const [input, want] of valid) {
    it(`reads ${JSON.stringify(input)} as ${want}`, () => {
      const got = parseQuantity(input, 'resources.limits.memory');
      assert.ok(Math.abs(got - want) <= Math.abs(want) * 1e-12, `got ${got}`);
    });
  }

  it('passes numbers through unchanged', () => {
    assert.equal(parseQuantity(2, 'x'), 2);
    assert.equal(parseQuantity(0.25, 'x'), 0.25);
  });

  const invalid = [
    '',
    'abc',
    'Ki',
    '1KiB',
    '1K',
    '1ki',
    '1 Ki',
    '1.2.3',
    '.',
    'e3',
    '1e',
    '1m5',
    '--1',
    '1Mi1',
  ];
  for (const input of invalid) {
    it(`rejects ${JSON.stringify(input)} with InvalidArgument naming the field`, () => {
      assert.throws(
        () => parseQuantity(input, 'spec.containers[app].resources.limits.cpu'),
        (err: unknown) =>
          hasCode(err, 'InvalidArgument') &&
          err instanceof Error &&
          err.message.includes('spec.containers[app].resources.limits.cpu'),
      );
    });
  }
});

describe('milliCPU', () => {
  const cases: [string | number, number][] = [
    ['0', 0],
    ['1m', 1],
    ['100m', 100],
    ['0.1', 100],
    ['0.3', 300],
    ['1', 1000],
    ['2.5', 2500],
    ['4.35', 4350],
    ['64', 64000],
    [0.5, 500],
    // Upstream MilliValue rounds up: anything above a whole millicore counts as the next one.
    ['0.0001', 1],
    ['1n', 1],
    ['1.0001', 1001],
    ['1500u', 2],
  ];
  for (const [input, want] of cases) {
    it(`reads ${JSON.stringify(input)} as ${want} millicores`, () => {
      // `===` rather than Object.is: milliCPU('0') is -0, which JSON and protobuf both encode as 0.
      const got = milliCPU(input, 'cpu');
      assert.ok(got === want, `got ${got}`);
    });
  }
});

describe('formatQuantity and canonicalQuantity', () => {
  it('writes bytes as resource.Quantity does: largest dividing binary suffix, small values decimal', () => {
    assert.equal(formatQuantity(2 * 2 ** 30, 'BinarySI'), '2Gi');
    assert.equal(formatQuantity(1536 * 1024, 'BinarySI'), '1536Ki');
    assert.equal(formatQuantity(1000, 'BinarySI'), '1k');
    assert.equal(formatQuantity(1500, 'BinarySI'), '1500');
    assert.equal(formatQuantity(0, 'BinarySI'), '0');
    assert.equal(formatQuantity(100e6, 'DecimalSI'), '100M');
  });

  it('canonicalizes a quantity string keeping its format', () => {
    assert.equal(canonicalQuantity('2048Ki', 'f'), '2Mi');
    assert.equal(canonicalQuantity('0.5Gi', 'f'), '512Mi');
    assert.equal(canonicalQuantity('1000M', 'f'), '1G');
  });
});
