/** What a probe saw (the attacker suite's checks return it). No upstream counterpart. */

/** Whether tskubelet's expectation holds, a one-line summary, and the evidence. */
export interface Observation {
  ok: boolean;
  observed: string;
  details: string[];
}

export const fail = (observed: string, details: string[] = []): Observation => ({
  ok: false,
  observed,
  details,
});
