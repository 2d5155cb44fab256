/**
 * Which dead containers and sandboxes a garbage collection pass removes (upstream kuberuntime_gc.go
 * evictContainers / evictSandboxes), as pure functions of what the runtime listed: no I/O here.
 */
import { wallAge } from '../util/clock.ts';

/** Upstream kubecontainer.GCPolicy. */
export interface ContainerGCPolicy {
  /** A container created less than this long ago is never collected (MinAge; 0 = no minimum). */
  minAgeMs: number;
  /** Dead instances kept per (pod UID, container name); < 0: no limit (MaxPerPodContainer). */
  maxPerPodContainer: number;
  /** Dead containers kept on the node; < 0: no limit (MaxContainers). */
  maxContainers: number;
}

/** A container that is not running, as the pass sees it (upstream containerGCInfo). */
export interface DeadContainer {
  id: string;
  podUID: string;
  podName: string;
  podNamespace: string;
  name: string;
  /** Unix ms. Age counts from creation, as upstream (not from the exit). */
  createdAt: number;
  /** CRI metadata.attempt: the kubelet's restart count at creation (newer runs have higher ones). */
  attempt?: number;
  /** Unknown: it might still run, so it is stopped before it is removed. */
  state: 'created' | 'exited' | 'unknown';
  /** The grace period written at creation (io.kubernetes.pod.terminationGracePeriod), if any. */
  terminationGracePeriodSeconds: number | undefined;
}

/** A sandbox as the pass sees it (upstream sandboxGCInfo). */
export interface GCSandbox {
  id: string;
  podUID: string;
  podName: string;
  podNamespace: string;
  createdAt: number;
  /** CRI metadata.attempt: each new sandbox of a pod gets the previous one's + 1. */
  attempt?: number;
  /** Ready, or some container (of any state) still belongs to it: never removed. */
  active: boolean;
}

export interface EvictContext {
  now: number;
  /** Every pod source has been seen: only then can a pod be known to be deleted. */
  allSourcesReady: boolean;
  isPodDeleted(uid: string): boolean;
}

/** Newest first; ties by ID so that a pass is deterministic (Go's sort is not stable either). */
const newestFirst = <T extends { id: string; createdAt: number }>(a: T, b: T): number =>
  b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Newest first among the instances of one container, or the sandboxes of one pod: by attempt, then
 * creation time. Creation times are wall stamps: after a backward step the newest run looks oldest,
 * and the GC would keep an old run and remove the one `logs --previous` and the status show.
 */
const newestInstanceFirst = <T extends { id: string; createdAt: number; attempt?: number }>(
  a: T,
  b: T,
): number => (b.attempt ?? 0) - (a.attempt ?? 0) || newestFirst(a, b);

/**
 * The dead containers to remove, in the order upstream removes them: all of deleted pods (once
 * sources are ready), then per (pod, container name) all but the newest `maxPerPodContainer`, then,
 * above `maxContainers` on the node, first down to an equal share per (pod, name) (at least one),
 * then the oldest across the node. Containers younger than `minAgeMs` are neither removed nor
 * counted. As upstream, a planned removal counts as done (a failed one is retried next pass).
 */
export function containersToEvict(
  dead: readonly DeadContainer[],
  policy: ContainerGCPolicy,
  ctx: EvictContext,
): DeadContainer[] {
  const out: DeadContainer[] = [];
  /** Upstream evictUnit: (pod UID, container name) → its evictable containers, newest first. */
  const units = new Map<string, DeadContainer[]>();
  for (const c of dead) {
    // A creation stamp ahead of now (the wall clock stepped back since) is age 0, not negative.
    if (wallAge(c.createdAt, ctx.now) < policy.minAgeMs) continue;
    const key = `${c.podUID}/${c.name}`;
    const unit = units.get(key);
    if (unit) unit.push(c);
    else units.set(key, [c]);
  }
  for (const unit of units.values()) unit.sort(newestInstanceFirst);

  if (ctx.allSourcesReady) {
    for (const [key, unit] of units) {
      const uid = unit[0]?.podUID;
      if (uid === undefined || !ctx.isPodDeleted(uid)) continue;
      out.push(...[...unit].reverse());
      units.delete(key);
    }
  }

  /** Keeps the newest `keep` of each unit; the rest (oldest first) are removed. */
  const limitUnits = (keep: number): void => {
    for (const [key, unit] of units) {
      if (unit.length <= keep) continue;
      out.push(...unit.slice(keep).reverse());
      units.set(key, unit.slice(0, keep));
    }
  };
  if (policy.maxPerPodContainer >= 0) limitUnits(policy.maxPerPodContainer);

  const count = (): number => [...units.values()].reduce((n, u) => n + u.length, 0);
  if (policy.maxContainers >= 0 && count() > policy.maxContainers) {
    // Units emptied above still count, as upstream's NumEvictUnits counts map keys.
    limitUnits(Math.max(1, Math.floor(policy.maxContainers / units.size)));
    const left = count();
    if (left > policy.maxContainers) {
      const flat = [...units.values()].flat().sort(newestFirst);
      out.push(...flat.slice(policy.maxContainers).reverse());
    }
  }
  return out;
}

/**
 * The sandboxes to remove: never an active one (ready, or with containers left); of a deleted pod
 * (once sources are ready) every other one; of any other pod all but its newest sandbox.
 */
export function sandboxesToEvict(sandboxes: readonly GCSandbox[], ctx: EvictContext): GCSandbox[] {
  const byPod = new Map<string, GCSandbox[]>();
  for (const s of sandboxes) {
    const list = byPod.get(s.podUID);
    if (list) list.push(s);
    else byPod.set(s.podUID, [s]);
  }
  const out: GCSandbox[] = [];
  for (const [uid, list] of byPod) {
    list.sort(newestInstanceFirst);
    const deleted = ctx.allSourcesReady && ctx.isPodDeleted(uid);
    // Oldest first, as upstream removes them.
    for (const s of list.slice(deleted ? 0 : 1).reverse()) if (!s.active) out.push(s);
  }
  return out;
}
