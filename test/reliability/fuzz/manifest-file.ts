/**
 * Fuzzed surface `manifest-file`: static pod manifests as the file source reads them. Each case is
 * one manifest text (corrupt.ts + manifest-text.ts) taken two ways:
 * - through the decode path the file source calls for every file (parseManifest → defaultStaticPod:
 *   YAML/JSON, shape check, defaults, validation), where anything thrown that is not a
 *   `KubeletError('InvalidArgument')` is a crash;
 *   what it accepts then goes through the kubelet's first I/O-free steps (consumers.ts);
 * - through the real file source (src/podsource/file-source.ts) on a one-file static pod path, whose
 *   snapshot or reported problem must agree with the decode path (a disagreement is a crash too).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeletPod } from '../../../src/api/types.ts';
import { createFileSource } from '../../../src/podsource/file-source.ts';
import { decodePods } from '../../../src/podsource/offload.ts';
import type { SourceProblem } from '../../../src/podsource/types.ts';
import { hasCode } from '../../../src/util/errors.ts';
import { nullLogger } from '../../../src/util/logger.ts';
import type { FuzzSurface } from '../scenario.ts';
import { exercise } from './consumers.ts';
import { corruptPod } from './corrupt.ts';
import { runSurface, thrown, type Verdict } from './harness.ts';
import { manifestText, type ManifestText } from './manifest-text.ts';
import { validPod } from './pod-arbitrary.ts';

const NODE = 'fuzz-node';

/**
 * The decode path of one manifest, as the file source's readOne runs it (inline, or in the decoder
 * thread for a large one, where anything thrown that is not a KubeletError comes back `Internal`).
 */
export async function decodeVerdict(kind: 'file' | 'http', text: string, origin: string): Promise<Verdict> {
  try {
    const pods = await decodePods({ kind, text, origin, nodeName: NODE }, { logger: nullLogger });
    for (const pod of pods) {
      const crash = exercise(pod);
      if (crash) return { kind: 'crash', detail: `accepted, then ${crash}` };
    }
    return { kind: 'accepted' };
  } catch (err) {
    if (hasCode(err, 'InvalidArgument')) return { kind: 'rejected', message: (err as Error).message };
    return { kind: 'crash', detail: `decode threw ${thrown(err)}` };
  }
}

/**
 * Per-case bound: 2 s, plus 2.5 s per MiB of text. A large manifest is parsed in the decoder
 * thread (so its time is not a stall of the event loop), and the YAML parser is linear but slow:
 * ~0.3 s per MiB of valid YAML, up to ~1.8 s per MiB of broken flow-style text (measured). The
 * bound is there to catch a decode that does not end or grows faster than its input.
 */
export function boundFor(text: string): number {
  return 2_000 + Math.ceil((text.length / 2 ** 20) * 2_500);
}

/** The real file source on one file: its first snapshot or first problem. */
function readThroughFileSource(
  path: string,
  signal: AbortSignal,
): Promise<{ pods?: KubeletPod[]; problem?: SourceProblem }> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: { pods?: KubeletPod[]; problem?: SourceProblem }) => {
      if (done) return;
      done = true;
      void source.stop().then(() => resolve(r));
    };
    const source = createFileSource({
      path,
      nodeName: NODE,
      checkFrequencyMs: 3_600_000,
      logger: nullLogger,
      onProblem: (problem) => finish({ problem }),
    });
    signal.addEventListener('abort', () => finish({}), { once: true });
    source.start((pods) => finish({ pods }));
  });
}

export const manifestFileSurface: FuzzSurface = {
  id: 'manifest-file',
  title:
    'Static pod manifests from the file source (YAML/JSON, wrong types, invalid names, deep nesting, huge strings, duplicate keys)',
  async run(opts) {
    const dir = await mkdtemp(join(tmpdir(), 'tskubelet-fuzz-file-'));
    let n = 0;
    try {
      return await runSurface<ManifestText>(
        {
          id: 'manifest-file',
          arbitrary: manifestText(
            corruptPod(validPod({ from: 'manifest' }), { validated: true, deep: 'sentinel' }),
          ),
          caseTimeoutMs: (input) => boundFor(input.text),
          async exec(input, signal) {
            const file = join(dir, `pod-${n++}.yaml`);
            const direct = await decodeVerdict('file', input.text, file);
            if (direct.kind === 'crash' || direct.kind === 'unclear') return direct;
            await writeFile(file, input.text);
            const viaSource = await readThroughFileSource(file, signal);
            await rm(file, { force: true });
            if (direct.kind === 'accepted') {
              if (viaSource.pods?.length !== 1)
                return {
                  kind: 'crash',
                  detail: `file source disagrees: decode accepted, source ${viaSource.problem ? `reported ${viaSource.problem.message}` : 'sent nothing'}`,
                };
              return direct;
            }
            if (!viaSource.problem || viaSource.problem.message !== direct.message)
              return {
                kind: 'crash',
                detail: `file source disagrees: decode refused (${direct.message.slice(0, 100)}), source ${viaSource.pods ? `sent ${viaSource.pods.length} pods` : `reported ${viaSource.problem?.message.slice(0, 100) ?? 'nothing'}`}`,
              };
            return direct;
          },
        },
        opts,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
};
