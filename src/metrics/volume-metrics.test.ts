import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { createVolumeMetrics } from './volume-metrics.ts';

describe('volume metrics (storage_operation_*, volume_manager_total_volumes)', () => {
  it("serves upstream's families: durations of successes, errors and statuses by plugin and operation", async () => {
    const registry = new Registry();
    const m = createVolumeMetrics(registry);
    m.operationDone('kubernetes.io/secret', 'volume_mount', 0.02, false);
    m.operationDone('kubernetes.io/local-volume', 'volume_mount', 3, true);
    const text = await registry.metrics();
    assert.match(text, /^# HELP storage_operation_duration_seconds \[ALPHA\] Storage operation duration$/m);
    assert.match(
      text,
      /^storage_operation_duration_seconds_bucket\{le="0.1",volume_plugin="kubernetes.io\/secret",operation_name="volume_mount"\} 1$/m,
    );
    assert.match(text, /le="600",volume_plugin="kubernetes.io\/secret"/);
    assert.doesNotMatch(text, /duration_seconds_count\{volume_plugin="kubernetes.io\/local-volume"/);
    assert.match(
      text,
      /^storage_operation_errors_total\{volume_plugin="kubernetes.io\/local-volume",operation_name="volume_mount"\} 1$/m,
    );
    assert.match(
      text,
      /^storage_operation_status_count\{volume_plugin="kubernetes.io\/local-volume",operation_name="volume_mount",status="fail-unknown"\} 1$/m,
    );
    assert.match(text, /status="success"\} 1$/m);
  });

  it('reads the volume counts at each scrape, keeping only the plugins that have volumes now', async () => {
    const registry = new Registry();
    const m = createVolumeMetrics(registry);
    let counts = [{ plugin: 'kubernetes.io/empty-dir', state: 'desired_state_of_world', count: 2 }];
    m.registerVolumeCounts(() => counts);
    assert.match(
      await registry.metrics(),
      /^volume_manager_total_volumes\{plugin_name="kubernetes.io\/empty-dir",state="desired_state_of_world"\} 2$/m,
    );
    counts = [];
    assert.doesNotMatch(await registry.metrics(), /^volume_manager_total_volumes\{/m);
  });
});
