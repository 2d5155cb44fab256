import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { escapeXml, legendLayout, lineChart, linearScale, niceTicks, pathData } from './svg-chart.ts';

describe('niceTicks', () => {
  it('steps by 1, 2 or 5 × 10^k and covers the range', () => {
    assert.deepEqual(niceTicks(0, 10, 5), [0, 2, 4, 6, 8, 10]);
    assert.deepEqual(niceTicks(0, 180, 8), [0, 50, 100, 150, 200]);
    assert.deepEqual(niceTicks(3, 97, 5), [0, 20, 40, 60, 80, 100]);
    assert.deepEqual(niceTicks(0.12, 0.87, 4), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  });

  it('starts at or below the minimum and ends at or above the maximum', () => {
    for (const [lo, hi] of [
      [13, 1234],
      [-7, 42],
      [0.001, 0.0047],
      [95.5, 96.2],
    ] as const) {
      const t = niceTicks(lo, hi, 5);
      assert.ok((t[0] ?? Infinity) <= lo, `${lo}..${hi}: ${t.join(',')}`);
      assert.ok((t[t.length - 1] ?? -Infinity) >= hi, `${lo}..${hi}: ${t.join(',')}`);
      assert.ok(t.length >= 2 && t.length <= 12, `${lo}..${hi}: ${t.join(',')}`);
    }
  });

  it('prints decimal steps without floating-point noise', () => {
    for (const v of niceTicks(0, 0.7, 7)) assert.ok(String(v).length <= 4, String(v));
  });

  it('widens a constant series instead of dividing by zero', () => {
    assert.deepEqual(niceTicks(0, 0), [-1, -0.5, 0, 0.5, 1]);
    const t = niceTicks(40, 40);
    assert.ok((t[0] ?? Infinity) < 40 && (t[t.length - 1] ?? -Infinity) > 40);
    assert.deepEqual(niceTicks(NaN, 1), [0, 1]);
  });
});

describe('linearScale', () => {
  it('maps the domain onto the range, inverted for an SVG y axis', () => {
    const sy = linearScale([0, 100], [300, 40]);
    assert.equal(sy(0), 300);
    assert.equal(sy(100), 40);
    assert.equal(sy(50), 170);
    const sx = linearScale([0, 180], [72, 740]);
    assert.equal(sx(90), 406);
  });

  it('maps a zero-width domain to the middle of the range', () => {
    assert.equal(linearScale([5, 5], [0, 10])(123), 5);
  });
});

describe('pathData', () => {
  const id = (v: number) => v;
  it('draws the points in x order with one decimal', () => {
    assert.equal(
      pathData(
        [
          { x: 2, y: 1 / 3 },
          { x: 0, y: 0 },
          { x: 1, y: 2.25 },
        ],
        id,
        id,
      ),
      'M0.0 0.0 L1.0 2.3 L2.0 0.3',
    );
  });

  it('leaves a gap at a missing value', () => {
    assert.equal(
      pathData(
        [
          { x: 0, y: 1 },
          { x: 1, y: NaN },
          { x: 2, y: 3 },
          { x: 3, y: 4 },
        ],
        id,
        (v) => 10 * v,
      ),
      'M0.0 10.0 M2.0 30.0 L3.0 40.0',
    );
    assert.equal(pathData([], id, id), '');
  });
});

describe('lineChart', () => {
  it('writes one path per series on shared axes, a legend, markers and escaped text', () => {
    const svg = lineChart({
      title: 'RSS <MiB> & more',
      xLabel: 'minutes',
      yLabel: 'MiB',
      series: [
        { label: 'tskubelet', color: '#1f77b4', points: [0, 1, 2].map((x) => ({ x, y: 80 + x })) },
        { label: 'upstream', color: '#ff7f0e', dash: '6 4', points: [0, 1, 2].map((x) => ({ x, y: 60 })) },
      ],
      markers: [{ x: 1.5, label: 'churn ends' }],
      shadeUntil: { x: 0.5, label: 'warm-up' },
    });
    assert.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
    assert.ok(svg.trimEnd().endsWith('</svg>'));
    assert.equal((svg.match(/<path /g) ?? []).length, 2);
    assert.ok(svg.includes('stroke-dasharray="6 4"'));
    assert.ok(svg.includes('RSS &lt;MiB&gt; &amp; more'));
    assert.ok(svg.includes('>churn ends<'));
    assert.ok(svg.includes('>warm-up<'));
    assert.ok(svg.includes('>tskubelet<') && svg.includes('>upstream<'));
    // The y axis starts at 0 by default: the tick "0" is labelled.
    assert.ok(svg.includes('dominant-baseline="middle">0<'));
  });

  it('marks each finite point with a dot when asked, so a curve of a few measured points shows them', () => {
    const points = [
      { x: 10, y: 1 },
      { x: 90, y: NaN },
      { x: 250, y: 3 },
    ];
    const svg = lineChart({
      title: 't',
      xLabel: 'pods',
      yLabel: 's',
      series: [
        { label: 'dots', color: 'red', points, showPoints: true },
        { label: 'line', color: 'blue', points },
      ],
    });
    assert.equal((svg.match(/<circle /g) ?? []).length, 2);
    assert.ok(svg.includes('fill="red"'));
  });

  it('is the same text for the same input', () => {
    const o = {
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [{ label: 'a', color: 'red', points: [{ x: 0, y: 1 }] }],
    };
    assert.equal(lineChart(o), lineChart(o));
  });
});

describe('legendLayout', () => {
  it('places entries left to right and wraps when the next one would not fit', () => {
    // widths: 30 + 7 × length, 20 px apart
    const l = legendLayout(['tskubelet', 'upstream', 'tskubelet running'], 250);
    assert.deepEqual(l.at, [
      { x: 0, row: 0 },
      { x: 113, row: 0 },
      { x: 0, row: 1 },
    ]);
    assert.equal(l.rows, 2);
    assert.equal(legendLayout([], 100).rows, 0);
    // A label wider than the row still gets a row of its own.
    assert.deepEqual(legendLayout(['x'.repeat(50)], 100).at, [{ x: 0, row: 0 }]);
  });
});

describe('escapeXml', () => {
  it('escapes the five XML specials', () => {
    assert.equal(escapeXml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
  });
});
