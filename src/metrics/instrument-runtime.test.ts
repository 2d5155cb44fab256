import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ImageService, PodSandboxConfig, RuntimeService } from '../runtime/cri/types.ts';
import { KubeletError } from '../util/errors.ts';
import { instrumentImageService, instrumentRuntimeService } from './instrument-runtime.ts';
import { createKubeletMetrics } from './kubelet-metrics.ts';

const SANDBOX: PodSandboxConfig = { metadata: { name: 'p', uid: 'u', namespace: 'ns', attempt: 0 } };

/** Only the methods a test calls; the rest reject, which these tests never reach. */
function fakeRuntime(overrides: Partial<RuntimeService>): RuntimeService {
  return new Proxy(overrides as RuntimeService, {
    get(target, key: string) {
      const own = (target as unknown as Record<string, unknown>)[key];
      return own ?? (() => Promise.reject(new Error(`unexpected call ${key}`)));
    },
  });
}

describe('instrumentRuntimeService', () => {
  it('times calls under upstream operation names and passes arguments and results through', async () => {
    const m = createKubeletMetrics({ nodeName: 'n', processMetrics: false });
    const seen: unknown[][] = [];
    const r = instrumentRuntimeService(
      fakeRuntime({
        listContainers: (...args) => {
          seen.push(args);
          return Promise.resolve([]);
        },
        runPodSandbox: (...args) => {
          seen.push(args);
          return Promise.resolve('sandbox-1');
        },
      }),
      m.runtime,
    );
    const filter = { podSandboxId: 'x' };
    assert.deepEqual(await r.listContainers(filter, { timeoutMs: 5 }), []);
    assert.equal(await r.runPodSandbox(SANDBOX, 'runc'), 'sandbox-1');
    assert.deepEqual(seen, [
      [filter, { timeoutMs: 5 }],
      [SANDBOX, 'runc'],
    ]);
    const text = await m.registry.metrics();
    assert.ok(text.includes('kubelet_runtime_operations_total{operation_type="list_containers"} 1'));
    assert.ok(text.includes('kubelet_runtime_operations_total{operation_type="run_podsandbox"} 1'));
    assert.ok(
      text.includes('kubelet_runtime_operations_duration_seconds_count{operation_type="list_containers"} 1'),
    );
    assert.ok(text.includes('kubelet_run_podsandbox_duration_seconds_count{runtime_handler="runc"} 1'));
    assert.ok(text.includes('kubelet_started_pods_total 1'));
    assert.ok(text.includes('kubelet_started_pods_errors_total 0'));
    assert.ok(!text.includes('kubelet_runtime_operations_errors_total{'), 'no errors yet');
  });

  it('rethrows the very error the runtime threw, and counts it', async () => {
    const m = createKubeletMetrics({ nodeName: 'n', processMetrics: false });
    const boom = new KubeletError('NotFound', 'CRI ContainerStatus', 'no such container');
    const r = instrumentRuntimeService(
      fakeRuntime({ containerStatus: () => Promise.reject(boom), runPodSandbox: () => Promise.reject(boom) }),
      m.runtime,
    );
    await assert.rejects(r.containerStatus('c1'), (err) => err === boom);
    await assert.rejects(r.runPodSandbox(SANDBOX), (err) => err === boom);
    const text = await m.registry.metrics();
    assert.ok(text.includes('kubelet_runtime_operations_errors_total{operation_type="container_status"} 1'));
    assert.ok(text.includes('kubelet_runtime_operations_total{operation_type="container_status"} 1'));
    assert.ok(text.includes('kubelet_run_podsandbox_errors_total{runtime_handler=""} 1'));
    assert.ok(text.includes('kubelet_started_pods_errors_total 1'));
  });

  it('keeps `this` for methods of class-based services', async () => {
    const m = createKubeletMetrics({ nodeName: 'n', processMetrics: false });
    class Images implements Pick<ImageService, 'imageFsInfo'> {
      private readonly usage = [{ timestamp: 1 }];
      imageFsInfo() {
        return Promise.resolve(this.usage);
      }
    }
    const i = instrumentImageService(new Images() as unknown as ImageService, m.runtime);
    assert.deepEqual(await i.imageFsInfo(), [{ timestamp: 1 }]);
    assert.ok(
      (await m.registry.metrics()).includes(
        'kubelet_runtime_operations_total{operation_type="image_fs_info"} 1',
      ),
    );
  });
});
