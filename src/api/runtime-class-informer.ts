/**
 * The kubelet's cache of RuntimeClasses (upstream pkg/kubelet/runtimeclass/runtimeclass_manager.go):
 * as upstream 1.20, a list/watch of `node.k8s.io/v1` RuntimeClasses (an informer, no resync) read
 * when a sandbox is created to turn a pod's `runtimeClassName` into the CRI `runtime_handler`.
 * Only the handler is kept: `overhead.podFixed` and `scheduling` are applied to the pod by the API
 * server's RuntimeClass admission plugin (the kubelet reads `spec.overhead` from the pod).
 */
import type { ApiClient } from './client-types.ts';
import type { Logger } from '../util/logger.ts';
import { createReflector, type ReflectorOptions } from './reflector.ts';

/** A RuntimeClass as the API sends it; only the fields the cache reads. */
interface WireRuntimeClass {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  handler?: string;
}

/**
 * The answer of a lookup: the handler, or why there is none (the text upstream puts after
 * "Failed to create pod sandbox: ", e.g. `runtimeclasses.node.k8s.io "kata" not found`).
 */
export type RuntimeHandlerLookup = { ok: true; handler: string } | { ok: false; message: string };

/** Upstream runtimeclass.Manager's LookupRuntimeHandler, as the runtime manager calls it. */
export interface RuntimeClassLookup {
  /**
   * The handler of the RuntimeClass of that name: '' for no name (the runtime's default handler);
   * a failure when the class does not exist or has not been listed yet. Never throws.
   */
  lookupRuntimeHandler(runtimeClassName: string | undefined): RuntimeHandlerLookup;
}

export interface RuntimeClassInformer extends RuntimeClassLookup {
  /** Starts listing and watching; idempotent. */
  start(): void;
  /** Stops the watch; the cache keeps its last contents. */
  stop(): Promise<void>;
  /** True once the first LIST has completed (stays true across relists). */
  hasSynced(): boolean;
}

export type RuntimeClassInformerOptions = { api: ApiClient; logger: Logger } & Pick<
  ReflectorOptions<WireRuntimeClass>,
  'minWatchTimeoutSeconds' | 'quietWatchMs' | 'backoffInitialMs' | 'backoffMaxMs'
>;

export const RUNTIME_CLASSES_PATH = '/apis/node.k8s.io/v1/runtimeclasses';

/** The lookup when no API client exists (standalone): upstream has no manager, so '' always. */
export const noRuntimeClasses: RuntimeClassLookup = {
  lookupRuntimeHandler: () => ({ ok: true, handler: '' }),
};

export function createRuntimeClassInformer(opts: RuntimeClassInformerOptions): RuntimeClassInformer {
  /** RuntimeClass name → handler. */
  const handlers = new Map<string, string>();

  const reflector = createReflector<WireRuntimeClass>({
    ...opts,
    path: RUNTIME_CLASSES_PATH,
    resource: 'runtimeclasses',
    replace(items) {
      handlers.clear();
      for (const rc of items) {
        const name = rc.metadata?.name;
        if (name) handlers.set(name, rc.handler ?? '');
      }
    },
    apply(type, rc) {
      const name = rc.metadata?.name;
      if (!name) return;
      if (type === 'DELETED') handlers.delete(name);
      else handlers.set(name, rc.handler ?? '');
    },
  });

  return {
    start: () => reflector.start(),
    stop: () => reflector.stop(),
    hasSynced: () => reflector.hasSynced(),
    lookupRuntimeHandler(name) {
      // The default RuntimeClass always resolves to the empty runtime handler.
      if (name === undefined || name === '') return { ok: true, handler: '' };
      const handler = handlers.get(name);
      if (handler !== undefined) return { ok: true, handler };
      // Upstream's informer answers NotFound until its first list too; saying so is clearer.
      if (!reflector.hasSynced()) {
        return {
          ok: false,
          message: `failed to lookup RuntimeClass ${name}: RuntimeClasses have not been listed yet`,
        };
      }
      return { ok: false, message: `runtimeclasses.node.k8s.io "${name}" not found` };
    },
  };
}
