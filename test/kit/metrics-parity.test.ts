import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ENDPOINTS, mixinReport, type Scrape } from './metrics-parity.ts';
import { parseFamilies } from './prom-text.ts';

function scrape(metrics: string): Scrape {
  const s = {} as Scrape;
  for (const e of ENDPOINTS) s[e] = parseFamilies(e === '/metrics' ? metrics : '');
  return s;
}

const NODE_NAME = '# TYPE kubelet_node_name gauge\nkubelet_node_name{node="n1"} 1\n';
const VOLUME = (labels: string) =>
  `# TYPE kubelet_volume_stats_used_bytes gauge\nkubelet_volume_stats_used_bytes{${labels}} 5\n`;

describe('the kubernetes-mixin series check', () => {
  it('fails on a series upstream shows and tskubelet lacks, or shows without the label an alert uses', () => {
    const up = scrape(NODE_NAME + VOLUME('namespace="a",persistentvolumeclaim="c"'));
    assert.deepEqual(mixinReport(up, scrape(NODE_NAME)).unexplained, [
      'mixin KubePersistentVolumeFillingUp: kubelet_volume_stats_used_bytes missing on tskubelet',
    ]);
    assert.equal(mixinReport(up, scrape(NODE_NAME + VOLUME('namespace="a"'))).unexplained.length, 1);
    assert.deepEqual(mixinReport(up, up).unexplained, []);
  });

  it('reports, without failing, a series neither kubelet shows a sample of', () => {
    const r = mixinReport(scrape(NODE_NAME), scrape(NODE_NAME));
    assert.deepEqual(r.unexplained, []);
    assert.ok(
      r.lines.includes(
        'mixin KubeletClientCertificateExpiration: kubelet_certificate_manager_client_ttl_seconds — neither (no sample upstream either)',
      ),
      r.lines.join('\n'),
    );
  });
});
