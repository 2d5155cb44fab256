import type { RuntimeService } from '../runtime/cri/index.ts';
import { describeError } from '../util/errors.ts';
import { RUNTIME_STATUS_PERIOD_MS } from '../config/defaults.ts';

/**
 * The container runtime as node readiness sees it (upstream runtimeState + updateRuntimeUp): CRI
 * Status is asked every RUNTIME_STATUS_PERIOD_MS; the runtime is ready when RuntimeReady and
 * NetworkReady are both true and the answer is recent.
 */
export interface RuntimeHealth {
  /** One CRI Version (until known) + Status call; never rejects (a failure is the state). */
  check(): Promise<void>;
  /** Ready, or why not: a false/missing condition, a dead runtime, or a stale answer. */
  state(): { ok: boolean; message: string };
  /** `<runtimeName>://<version>` once CRI Version answered, else ''. */
  version(): string;
}

const CHECK_TIMEOUT_MS = 5_000;
const REQUIRED = ['RuntimeReady', 'NetworkReady'] as const;

/** `monotonic`: ms on the monotonic clock, for the age of the last answer. */
export function createRuntimeHealth(runtime: RuntimeService, monotonic: () => number): RuntimeHealth {
  let last = { ok: false, message: 'container runtime status check may not have completed yet', at: 0 };
  let version = '';
  return {
    async check() {
      try {
        if (version === '') {
          const v = await runtime.version({ timeoutMs: CHECK_TIMEOUT_MS });
          version = `${v.runtimeName}://${v.runtimeVersion}`;
        }
        const st = await runtime.status({ timeoutMs: CHECK_TIMEOUT_MS });
        const bad = st.conditions
          .filter((c) => (REQUIRED as readonly string[]).includes(c.type) && !c.status)
          .map((c) => `${c.type}=false reason:${c.reason} message:${c.message}`);
        const missing = REQUIRED.filter((t) => !st.conditions.some((c) => c.type === t));
        last = {
          ok: bad.length === 0 && missing.length === 0,
          message: [...bad, ...missing.map((m) => `${m} condition missing`)].join(', '),
          at: monotonic(),
        };
      } catch (err) {
        last = { ok: false, message: `container runtime is down: ${describeError(err)}`, at: monotonic() };
      }
    },
    state() {
      if (!last.ok) return { ok: false, message: last.message };
      const age = monotonic() - last.at;
      if (age > 3 * RUNTIME_STATUS_PERIOD_MS) {
        return {
          ok: false,
          message: `container runtime status check is stale (${Math.round(age / 1000)}s old)`,
        };
      }
      return { ok: true, message: '' };
    },
    version: () => version,
  };
}
