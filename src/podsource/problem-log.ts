/**
 * Remembers which manifest problems were already reported, so a source that re-reads the same
 * broken file every period logs it loudly once (warn + onProblem) and quietly afterwards (debug).
 */
import type { Logger } from '../util/logger.ts';
import type { PodSourceName, SourceProblem } from './types.ts';

export interface ProblemLog {
  /** Reports a problem: warn + onProblem when new or changed for its origin, debug when repeated. */
  report(p: Omit<SourceProblem, 'source'>): void;
  /** Forgets problems of origins not in `still` (they were fixed or went away); logs each fix at info. */
  retain(still: ReadonlySet<string>): void;
  /** Forgets the problem of one origin (it is fine now). */
  clear(origin: string): void;
}

export function createProblemLog(
  source: PodSourceName,
  logger: Logger,
  onProblem: ((p: SourceProblem) => void) | undefined,
): ProblemLog {
  const last = new Map<string, string>();
  const forget = (origin: string) => {
    if (last.delete(origin)) logger.info('Manifest problem resolved', { origin });
  };
  return {
    report(p) {
      const fields = {
        origin: p.origin,
        reason: p.reason,
        error: p.message,
        ...(p.pod ? { pod: p.pod } : {}),
      };
      if (last.get(p.origin) === p.message) {
        logger.debug('Manifest still invalid', fields);
        return;
      }
      last.set(p.origin, p.message);
      logger.warn('Could not use manifest, ignoring it', fields);
      onProblem?.({ source, ...p });
    },
    retain(still) {
      for (const origin of [...last.keys()]) if (!still.has(origin)) forget(origin);
    },
    clear: forget,
  };
}

/** A source problem as one line (an event message): which source, file or URL, and what is wrong. */
export function describeSourceProblem(p: SourceProblem): string {
  const where = p.message.includes(p.origin) ? '' : ` ${p.origin}:`;
  return `${p.source} pod source:${where} ${p.message}`;
}
