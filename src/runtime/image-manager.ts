import { createHash } from 'node:crypto';
import type { Container, KubeletPod, PullPolicy } from '../api/types.ts';
import { podFullName } from '../api/types.ts';
import type { EventRecorder } from '../api/events.ts';
import { createRateLimiter, type RateLimiter } from '../api/rate-limiter.ts';
import type { AuthConfig, ImageService, PodSandboxConfig } from './cri/types.ts';
import { createBackoff, type Backoff } from '../util/backoff.ts';
import {
  DEFAULT_MAX_PARALLEL_IMAGE_PULLS,
  DEFAULT_REGISTRY_BURST,
  DEFAULT_REGISTRY_PULL_QPS,
  IMAGE_BACKOFF_INITIAL_MS,
  IMAGE_BACKOFF_MAX_MS,
  IMAGE_PULL_TIMEOUT_MS,
} from '../config/defaults.ts';
import { KubeletError, describeError, isCanceled } from '../util/errors.ts';
import { untilAborted, abortReason, combineSignals } from '../util/abort.ts';
import { nullLogger, type Logger } from '../util/logger.ts';
import {
  EMPTY_KEYRING,
  keyringFromSecrets,
  toAuthConfig,
  unionKeyring,
  type Keyring,
  type PullSecret,
  type RegistryCredential,
} from './pull-secrets.ts';

/** Why a container could not get its image; these strings become the waiting reason in pod status. */
export type ImageErrorReason =
  'ErrImagePull' | 'ImagePullBackOff' | 'ErrImageNeverPull' | 'InvalidImageName' | 'ImageInspectError';

export class ImageError extends Error {
  readonly reason: ImageErrorReason;
  constructor(reason: ImageErrorReason, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ImageError';
    this.reason = reason;
  }
}

/**
 * Makes sure a container's image is present, honouring imagePullPolicy, the pod's imagePullSecrets
 * and the node's own credentials (each matching one tried in turn), the parallel-pull limit, the
 * registry QPS and the per-image pull back-off (upstream images.ImageManager + puller + kuberuntime
 * PullImage).
 */
export interface ImageManager {
  /**
   * Resolves to the image reference (image ID) to create the container from. Rejects with an
   * ImageError whose `reason` is the container's waiting reason; rejects with the signal's reason
   * (not an ImageError, no event, no back-off) when `signal` aborts first.
   */
  ensureImage(
    pod: KubeletPod,
    container: Container,
    sandboxConfig: PodSandboxConfig,
    signal?: AbortSignal,
  ): Promise<string>;
}

export interface ImageManagerDeps {
  images: ImageService;
  recorder: EventRecorder;
  logger?: Logger;
  now?: () => number;
  backoff?: Backoff;
  /**
   * The pod's imagePullSecrets, resolved (cluster mode: read from the API; a secret that cannot be
   * read is left out, as upstream does). Absent: no secrets (standalone). A rejection is logged and
   * the pull goes on without secrets, as upstream does when it cannot read them.
   */
  pullSecrets?: (pod: KubeletPod, signal?: AbortSignal) => Promise<PullSecret[]>;
  /**
   * The node's own credentials (its docker config file, src/runtime/node-credentials.ts), looked
   * up after the pod's secrets, as upstream's default keyring. Absent: none. A rejection is logged
   * and the pull goes on with the pod's credentials only.
   */
  nodeCredentials?: () => Promise<Keyring>;
  /**
   * Pulls running at once across all pods (maxParallelImagePulls; 1 = serializeImagePulls).
   * Default 5. `Infinity` means no limit.
   */
  maxParallelPulls?: number;
  /** registryPullQPS (0 = no limit), default 5. Ignored when `rateLimiter` is given. */
  registryPullQPS?: number;
  /**
   * registryBurst, default 10. A burst of 0 with a QPS limit is taken as 1: upstream's token bucket
   * would then refuse every pull ("pull QPS exceeded"), ours would wait forever.
   */
  registryBurst?: number;
  /** Replaces the token bucket built from registryPullQPS/registryBurst (tests). */
  rateLimiter?: RateLimiter;
  /** Bound on one pull (all credential attempts, after its turn came). Default 10 min. */
  pullTimeoutMs?: number;
}

/** An image reference, parsed and normalized as docker's reference.ParseNormalizedNamed does. */
export interface ImageReference {
  /** e.g. `docker.io`, `127.0.0.1:5000` */
  domain: string;
  /** e.g. `library/busybox` */
  path: string;
  /** `domain/path`: what credentials are looked up by (upstream repoToPull). */
  repository: string;
  tag: string | undefined;
  digest: string | undefined;
}

const DEFAULT_DOMAIN = 'docker.io';
const LEGACY_DEFAULT_DOMAIN = 'index.docker.io';
const NAME_TOTAL_LENGTH_MAX = 255;
const ALPHA_NUMERIC = '[a-z0-9]+';
const SEPARATOR = '(?:[._]|__|[-]+)';
const NAME_COMPONENT = `${ALPHA_NUMERIC}(?:${SEPARATOR}${ALPHA_NUMERIC})*`;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9a-fA-F:.]+\\])(?::[0-9]+)?`;
const PATH_RE = new RegExp(`^${NAME_COMPONENT}(?:/${NAME_COMPONENT})*$`);
const DOMAIN_RE = new RegExp(`^${DOMAIN}$`);
const TAG_RE = /^[\w][\w.-]{0,127}$/;
const DIGEST_RE = /^([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*):([0-9a-fA-F]{32,})$/;
const DIGEST_HEX_LENGTH: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

/** Parses an image reference; throws an Error whose message says why it is invalid. */
export function parseImageReference(image: string): ImageReference {
  if (/^[a-f0-9]{64}$/.test(image)) {
    throw new Error(`invalid repository name (${image}), cannot specify 64-byte hexadecimal strings`);
  }
  let rest = image;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    const m = DIGEST_RE.exec(digest);
    if (!m) throw new Error('invalid reference format');
    const want = DIGEST_HEX_LENGTH[m[1] ?? ''];
    if (want === undefined) throw new Error('unsupported digest algorithm');
    if ((m[2] ?? '').length !== want) throw new Error('invalid checksum digest length');
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG_RE.test(tag)) throw new Error('invalid reference format');
  }
  const slash = rest.indexOf('/');
  const first = slash === -1 ? '' : rest.slice(0, slash);
  let domain: string;
  let path: string;
  if (slash === -1 || (!/[.:]/.test(first) && first !== 'localhost' && first.toLowerCase() === first)) {
    domain = DEFAULT_DOMAIN;
    path = rest;
  } else {
    domain = first;
    path = rest.slice(slash + 1);
  }
  if (domain === LEGACY_DEFAULT_DOMAIN) domain = DEFAULT_DOMAIN;
  if (domain === DEFAULT_DOMAIN && !path.includes('/')) path = `library/${path}`;
  if (path.toLowerCase() !== path) throw new Error('repository name must be lowercase');
  if (!DOMAIN_RE.test(domain) || !PATH_RE.test(path)) throw new Error('invalid reference format');
  const repository = `${domain}/${path}`;
  if (repository.length > NAME_TOTAL_LENGTH_MAX) {
    throw new Error(`repository name must not be more than ${NAME_TOTAL_LENGTH_MAX} characters`);
  }
  return { domain, path, repository, tag, digest };
}

/** Upstream SetDefaults_Container: `Always` when the tag is `latest` (or absent without a digest). */
export function defaultPullPolicyFor(ref: ImageReference): PullPolicy {
  const tag = ref.tag ?? (ref.digest === undefined ? 'latest' : '');
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** `docker.io/library/busybox:1.29` → true; `busybox`, `busybox:latest` → false; digests count as pinned. */
export function hasPinnedTag(image: string): boolean {
  try {
    return defaultPullPolicyFor(parseImageReference(image)) === 'IfNotPresent';
  } catch {
    // An unparsable reference has no tag worth trusting; the pull will report the parse error.
    return false;
  }
}

/** Upstream shouldPullImage. */
export function shouldPullImage(policy: PullPolicy, present: boolean): boolean {
  switch (policy) {
    case 'Never':
      return false;
    case 'Always':
      return true;
    case 'IfNotPresent':
      return !present;
  }
}

/**
 * Formats a duration as Go's time.Duration.String does ("81ms", "1.234s", "2m3.5s"), which is how
 * upstream's Pulled event reports it.
 */
export function formatGoDuration(ms: number): string {
  let ns = Math.round(ms * 1e6);
  if (ns === 0) return '0s';
  const sign = ns < 0 ? '-' : '';
  ns = Math.abs(ns);
  const frac = (value: number, digits: number): string => {
    const whole = Math.floor(value / 10 ** digits);
    const rest = String(value % 10 ** digits)
      .padStart(digits, '0')
      .replace(/0+$/, '');
    return rest === '' ? String(whole) : `${whole}.${rest}`;
  };
  if (ns < 1e3) return `${sign}${ns}ns`;
  if (ns < 1e6) return `${sign}${frac(ns, 3)}µs`;
  if (ns < 1e9) return `${sign}${frac(ns, 6)}ms`;
  const h = Math.floor(ns / 3.6e12);
  const m = Math.floor((ns % 3.6e12) / 6e10);
  const s = frac(ns % 6e10, 9);
  if (h > 0) return `${sign}${h}h${m}m${s}s`;
  if (m > 0) return `${sign}${m}m${s}s`;
  return `${sign}${s}s`;
}

/** A FIFO counting semaphore whose waits can be cancelled. */
interface Semaphore {
  acquire(signal?: AbortSignal): Promise<() => void>;
  active(): number;
  waiting(): number;
}

function createSemaphore(limit: number): Semaphore {
  let active = 0;
  const queue: { grant: () => void }[] = [];
  const release = () => {
    active--;
    const next = queue.shift();
    if (next) next.grant();
  };
  const once = () => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      release();
    };
  };
  return {
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(abortReason(signal));
      if (active < limit) {
        active++;
        return Promise.resolve(once());
      }
      return new Promise((resolve, reject) => {
        const waiter = {
          grant: () => {
            signal?.removeEventListener('abort', onAbort);
            active++;
            resolve(once());
          },
        };
        const onAbort = () => {
          const i = queue.indexOf(waiter);
          if (i !== -1) queue.splice(i, 1);
          reject(abortReason(signal));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        queue.push(waiter);
      });
    },
    active: () => active,
    waiting: () => queue.length,
  };
}

/** upstream utilerrors.NewAggregate(...).Error(): one message alone, several in brackets. */
function aggregateMessage(errors: unknown[]): string {
  const msgs = errors.map(describeError);
  return msgs.length === 1 ? (msgs[0] ?? '') : `[${msgs.join(', ')}]`;
}

interface InflightPull {
  promise: Promise<string>;
  controller: AbortController;
  waiters: number;
}

export function createImageManager(deps: ImageManagerDeps): ImageManager {
  const now = deps.now ?? Date.now;
  const log = deps.logger ?? nullLogger;
  const backoff = deps.backoff ?? createBackoff(IMAGE_BACKOFF_INITIAL_MS, IMAGE_BACKOFF_MAX_MS);
  const maxParallel = deps.maxParallelPulls ?? DEFAULT_MAX_PARALLEL_IMAGE_PULLS;
  if (!(maxParallel >= 1)) {
    throw new KubeletError('InvalidArgument', 'create image manager', `maxParallelPulls ${maxParallel} < 1`);
  }
  const slots = createSemaphore(maxParallel);
  const limiter =
    deps.rateLimiter ??
    createRateLimiter(
      deps.registryPullQPS ?? DEFAULT_REGISTRY_PULL_QPS,
      Math.max(1, deps.registryBurst ?? DEFAULT_REGISTRY_BURST),
    );
  const pullTimeoutMs = deps.pullTimeoutMs ?? IMAGE_PULL_TIMEOUT_MS;
  const inflight = new Map<string, InflightPull>();

  /** One pull of `image` with each credential in turn until one works (kuberuntime PullImage). */
  async function pullOnce(
    image: string,
    creds: readonly RegistryCredential[],
    sandboxConfig: PodSandboxConfig,
    signal: AbortSignal,
    plog: Logger,
  ): Promise<string> {
    const release = await slots.acquire(signal);
    try {
      await limiter.acquire(signal);
      const bounded = combineSignals([signal], pullTimeoutMs);
      const attempts: (AuthConfig | undefined)[] = creds.length === 0 ? [undefined] : creds.map(toAuthConfig);
      const errors: unknown[] = [];
      for (const [i, auth] of attempts.entries()) {
        try {
          plog.debug('pulling image', {
            image,
            credentials: auth ? `${creds[i]?.source ?? ''} #${i + 1}/${creds.length}` : 'none',
          });
          return await deps.images.pullImage({ image }, auth, sandboxConfig, { signal: bounded });
        } catch (err) {
          if (signal.aborted) throw err;
          if (bounded.aborted) {
            throw new KubeletError('DeadlineExceeded', 'pull image', `no result within ${pullTimeoutMs} ms`, {
              cause: err,
            });
          }
          errors.push(err);
        }
      }
      // One attempt: its own error, as upstream returns it. Several: all of them, in order.
      if (errors.length === 1) throw errors[0];
      throw new KubeletError(
        'Unknown',
        `pull image "${image}" with ${errors.length} credentials`,
        aggregateMessage(errors),
        { cause: errors[0] },
      );
    } finally {
      release();
    }
  }

  /**
   * Joins the pull in flight for the same image with the same credentials, or starts one. The pull
   * goes on while anyone waits for it; the last waiter to give up cancels it.
   */
  function sharedPull(
    image: string,
    creds: readonly RegistryCredential[],
    sandboxConfig: PodSandboxConfig,
    signal: AbortSignal | undefined,
    plog: Logger,
  ): Promise<string> {
    const credsHash = createHash('sha256')
      .update(JSON.stringify(creds.map(toAuthConfig)))
      .digest('hex');
    const key = `${image}\0${credsHash}`;
    let entry = inflight.get(key);
    if (entry === undefined) {
      const controller = new AbortController();
      const e: InflightPull = {
        controller,
        waiters: 0,
        promise: pullOnce(image, creds, sandboxConfig, controller.signal, plog).finally(() => {
          if (inflight.get(key) === e) inflight.delete(key);
        }),
      };
      // Every waiter observes the outcome through untilAborted; this only keeps a pull that all
      // waiters abandoned from becoming an unhandled rejection.
      e.promise.catch((err: unknown) => plog.debug('shared pull ended', { image, err: describeError(err) }));
      inflight.set(key, e);
      entry = e;
    } else {
      plog.debug('joining a pull in flight', { image });
    }
    const joined = entry;
    joined.waiters++;
    return untilAborted(joined.promise, signal).finally(() => {
      joined.waiters--;
      if (joined.waiters === 0 && !joined.controller.signal.aborted && signal?.aborted) {
        if (inflight.get(key) === joined) inflight.delete(key);
        joined.controller.abort(abortReason(signal));
      }
    });
  }

  async function secretsFor(
    pod: KubeletPod,
    signal: AbortSignal | undefined,
    plog: Logger,
  ): Promise<PullSecret[]> {
    if (!deps.pullSecrets || (pod.spec.imagePullSecrets ?? []).length === 0) return [];
    try {
      return await deps.pullSecrets(pod, signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      plog.warn('Unable to retrieve pull secrets; the image pull may not succeed', {
        err: describeError(err),
      });
      return [];
    }
  }

  async function nodeKeyring(signal: AbortSignal | undefined, plog: Logger): Promise<Keyring> {
    if (!deps.nodeCredentials) return EMPTY_KEYRING;
    try {
      return await untilAborted(deps.nodeCredentials(), signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      plog.warn('Unable to read the node registry credentials; pulling with the pod secrets only', {
        err: describeError(err),
      });
      return EMPTY_KEYRING;
    }
  }

  return {
    async ensureImage(pod, container, sandboxConfig, signal) {
      const plog = log.child({ pod: podFullName(pod), podUID: pod.metadata.uid, container: container.name });
      const image = container.image ?? '';
      let ref: ImageReference;
      try {
        ref = parseImageReference(image);
      } catch (err) {
        const msg = `Failed to apply default image tag "${image}": couldn't parse image reference "${image}": ${describeError(err)}`;
        deps.recorder.event(pod, 'Warning', 'InspectFailed', msg);
        throw new ImageError('InvalidImageName', msg, { cause: err });
      }
      // As upstream: a bare name gets `:latest` appended, not a fully qualified rewrite, so the
      // runtime sees the name the user wrote.
      const spec = ref.tag === undefined && ref.digest === undefined ? `${image}:latest` : image;

      let present;
      try {
        present = await deps.images.imageStatus({ image: spec }, { signal });
      } catch (err) {
        if (signal?.aborted || isCanceled(err)) throw err;
        const msg = `Failed to inspect image "${image}": ${describeError(err)}`;
        deps.recorder.event(pod, 'Warning', 'InspectFailed', msg);
        throw new ImageError('ImageInspectError', msg, { cause: err });
      }
      const policy = container.imagePullPolicy ?? defaultPullPolicyFor(ref);
      if (!shouldPullImage(policy, present !== null)) {
        if (present) {
          deps.recorder.event(
            pod,
            'Normal',
            'Pulled',
            `Container image "${image}" already present on machine`,
          );
          return present.id;
        }
        const msg = `Container image "${image}" is not present with pull policy of Never`;
        deps.recorder.event(pod, 'Warning', 'ErrImageNeverPull', msg);
        throw new ImageError('ErrImageNeverPull', msg);
      }

      const key = `${pod.metadata.uid}_${image}`;
      // Upstream IsInBackOffSinceUpdate: the window runs from the last failed pull.
      const last = backoff.entries().get(key);
      if (last !== undefined && backoff.isInBackoffSince(key, last.lastUpdateMs, now())) {
        const msg = `Back-off pulling image "${image}"`;
        deps.recorder.event(pod, 'Normal', 'BackOff', msg);
        throw new ImageError('ImagePullBackOff', msg);
      }

      deps.recorder.event(pod, 'Normal', 'Pulling', `Pulling image "${image}"`);
      const started = now();
      let imageRef: string;
      try {
        const secrets = await secretsFor(pod, signal, plog);
        // Upstream MakeDockerKeyring: the pod's secrets first, then the node's own credentials.
        const keyring = unionKeyring(keyringFromSecrets(secrets), await nodeKeyring(signal, plog));
        const creds = keyring.lookup(ref.repository);
        imageRef = await sharedPull(spec, creds, sandboxConfig, signal, plog);
      } catch (err) {
        // The caller gave up (pod terminating, kubelet stopping): not the image's fault.
        if (signal?.aborted) throw err;
        const t = now();
        backoff.next(key, t, t);
        const reason = describeError(err);
        deps.recorder.event(pod, 'Warning', 'Failed', `Failed to pull image "${image}": ${reason}`);
        throw new ImageError('ErrImagePull', reason, { cause: err });
      }
      deps.recorder.event(
        pod,
        'Normal',
        'Pulled',
        `Successfully pulled image "${image}" in ${formatGoDuration(now() - started)}`,
      );
      backoff.gc(now());
      return imageRef;
    },
  };
}
