import { PROBE_MAX_OUTPUT_BYTES } from '../config/defaults.ts';
import { hasCode } from '../util/errors.ts';
import { failure, limitedText, success, type ProbeOutcome } from './outcome.ts';

/** CRI ExecSync as the prober needs it (the kubelet passes `cri.runtime.execSync`). */
export type ExecFn = (
  containerId: string,
  cmd: string[],
  timeoutSeconds: number,
  signal?: AbortSignal,
) => Promise<{ stdout: Buffer; stderr: Buffer; exitCode: number }>;

/**
 * An exec that outlived its timeout: containerd (verified on 1.6.20) answers DeadlineExceeded with
 * "timeout 1s exceeded: context deadline exceeded", as does our CRI client's own deadline; a runtime
 * that maps the same error to Unknown still says "timeout <d> exceeded".
 */
function isExecTimeout(err: unknown): boolean {
  if (hasCode(err, 'DeadlineExceeded')) return true;
  return err instanceof Error && /\btimeout \S+ exceeded\b/.test(err.message);
}

/**
 * Runs `cmd` in the container (upstream probe/exec over CRI ExecSync): exit code 0 is success, any
 * other is failure; the output is stdout then stderr, cut at 10 KiB. A command that outlives
 * `timeoutSeconds` is a failure (upstream ExecProbeTimeout, on by default). Any other error (the
 * container is gone, the runtime is down, the signal aborted) is thrown: the probe could not
 * conclude.
 */
export async function execProbe(
  exec: ExecFn,
  containerId: string,
  cmd: string[],
  timeoutSeconds: number,
  signal?: AbortSignal,
): Promise<ProbeOutcome> {
  let res: { stdout: Buffer; stderr: Buffer; exitCode: number };
  try {
    res = await exec(containerId, cmd, timeoutSeconds, signal);
  } catch (err) {
    if (!signal?.aborted && isExecTimeout(err))
      return failure(`command ${JSON.stringify(cmd.join(' '))} timed out`);
    throw err;
  }
  const output = limitedText([res.stdout, res.stderr], PROBE_MAX_OUTPUT_BYTES);
  return res.exitCode === 0 ? success(output) : failure(output);
}
