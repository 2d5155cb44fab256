import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { hasCode } from '../util/errors.ts';
import { nullLogger } from '../util/logger.ts';
import { parseManifest } from './decode.ts';
import { decodePods, INLINE_DECODE_BYTES } from './offload.ts';
import { defaultStaticPod } from './static-pod.ts';
import { buildManifest } from '../../test/kit/pod.ts';
import { delayMeter, describeDelay } from '../../test/kit/stall-meter.ts';

const NODE = 'node-1';

/** A valid pod whose YAML is about `mib` MiB (one container with many env vars). */
function bigPodYaml(mib: number): string {
  const n = Math.ceil((mib * 2 ** 20) / 80);
  const env = Array.from({ length: n }, (_, i) => ({
    name: `VAR_${i}`,
    value: `value-${i}-${'x'.repeat(40)}`,
  }));
  return stringify(buildManifest('big', { containers: [{ name: 'c', env }] }));
}

describe('decoding large manifests off the event loop', () => {
  it('gives the same pod from the decoder thread as inline', async () => {
    const text = bigPodYaml(1);
    assert.ok(text.length > INLINE_DECODE_BYTES);
    const [viaThread] = await decodePods(
      { kind: 'file', text, origin: '/m/big.yaml', nodeName: NODE },
      { logger: nullLogger },
    );
    const inline = defaultStaticPod(parseManifest(text, '/m/big.yaml'), {
      nodeName: NODE,
      source: 'file',
      origin: '/m/big.yaml',
    });
    assert.deepEqual(viaThread, inline);
  });

  it('refuses an invalid large manifest with the same typed message as inline', async () => {
    const text = bigPodYaml(0.5).replace('image: busybox:1.29', 'image: ""');
    await assert.rejects(
      decodePods({ kind: 'file', text, origin: '/m/big.yaml', nodeName: NODE }, { logger: nullLogger }),
      (err: unknown) =>
        hasCode(err, 'InvalidArgument') &&
        /decode static pod from \/m\/big\.yaml: invalid pod: spec\.containers\[0\]\.image: Required value/.test(
          (err as Error).message,
        ),
    );
    await assert.rejects(
      decodePods(
        { kind: 'http', text: `${text}\n  : : :`, origin: 'http://x/pods', nodeName: NODE },
        { logger: nullLogger },
      ),
      (err: unknown) =>
        hasCode(err, 'InvalidArgument') && /YAML: line \d+, column \d+/.test((err as Error).message),
    );
  });

  it('keeps the event loop responsive while a 5 MiB YAML manifest is decoded (inline it stops it for seconds)', async () => {
    const text = bigPodYaml(5);
    const meter = delayMeter();
    const t0 = performance.now();
    const pods = await decodePods(
      { kind: 'file', text, origin: '/m/big.yaml', nodeName: NODE },
      { logger: nullLogger },
    );
    const took = performance.now() - t0;
    const d = meter.stop();
    assert.equal(pods.length, 1);
    // The decode itself takes over a second; the loop is never held more than a fraction of it
    // (on the main thread's CPU clock: waiting for a core behind other processes is not the decoder's).
    assert.ok(d.maxMs < 300, `over a ${took.toFixed(0)} ms decode: ${describeDelay(d)}`);
  });

  it('does not keep the process alive once idle (the decoder thread held it for a minute)', async () => {
    const script = [
      `import { decodePods } from ${JSON.stringify(new URL('./offload.ts', import.meta.url).href)};`,
      `import { nullLogger } from ${JSON.stringify(new URL('../util/logger.ts', import.meta.url).href)};`,
      `const env = Array.from({ length: 20000 }, (_, i) => '      - name: V' + i + '\\n        value: x' + i).join('\\n');`,
      `const text = 'apiVersion: v1\\nkind: Pod\\nmetadata:\\n  name: a\\nspec:\\n  containers:\\n    - name: c\\n      image: busybox:1.29\\n      env:\\n' + env + '\\n';`,
      `const pods = await decodePods({ kind: 'file', text, origin: '/x.yaml', nodeName: 'n' }, { logger: nullLogger });`,
      `console.log(pods[0].spec.containers[0].env.length);`,
    ].join('\n');
    const t0 = Date.now();
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      timeout: 30_000,
    });
    assert.equal(stdout.trim(), '20000');
    assert.ok(Date.now() - t0 < 15_000, `the process took ${Date.now() - t0} ms to exit`);
  });
});
