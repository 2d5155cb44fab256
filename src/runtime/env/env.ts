/**
 * The container environment as Kubernetes specifies it (upstream kubelet_pods.go
 * makeEnvironmentVariables; the sources live beside it: service-env.ts for service links,
 * env-objects.ts for envFrom and ConfigMap/Secret keys, env-field-refs.ts for the downward API).
 *
 * Precedence, lowest first: service-link variables, then `envFrom` sources in order, then `env` in
 * order (a later entry of the same name wins). A literal `value` may reference, with `$(NAME)`, any
 * variable defined before it (envFrom, earlier env) or a service variable; `$$` escapes a `$`, and an
 * unknown reference stays verbatim.
 */
import type { Container, EnvVar } from '../../api/types.ts';
import type { KeyValue } from '../cri/index.ts';
import { envError, obj, type EnvContext, type EnvWarning } from './env-context.ts';
import { fieldRefValue, resourceFieldRefValue } from './env-field-refs.ts';
import { ObjectCache, envFromVariables, keyRefValue } from './env-objects.ts';
import { expandVars } from './expand.ts';
import { serviceEnvFor } from './service-env.ts';

/**
 * Resolves the environment of `ctx.container`, returning warnings (invalid envFrom keys, skipped as
 * the 1.20 kubelet did) instead of reporting them. Throws a KubeletError naming the variable (or the
 * envFrom source) on any failure; the runtime turns that into CreateContainerConfigError.
 */
export async function resolveEnvironment(
  ctx: EnvContext,
): Promise<{ envs: KeyValue[]; warnings: EnvWarning[] }> {
  ctx.signal?.throwIfAborted();
  const { pod, container } = ctx;
  const namespace = pod.metadata.namespace || 'default';
  const serviceEnv = serviceEnvFor(pod, ctx.services, namespace);
  const cache = new ObjectCache(ctx, namespace);
  const { env, warnings } = await envFromVariables(cache, namespace, container);

  const lookup = (n: string) => env.get(n) ?? serviceEnv.get(n);
  for (const e of container.env ?? []) {
    const value = await envVarValue(ctx, cache, namespace, e, lookup);
    if (value !== undefined) env.set(e.name, value);
  }

  const envs = [...env].map(([key, value]) => ({ key, value }));
  for (const [key, value] of serviceEnv) if (!env.has(key)) envs.push({ key, value });
  return { envs, warnings };
}

async function envVarValue(
  ctx: EnvContext,
  cache: ObjectCache,
  namespace: string,
  e: EnvVar,
  lookup: (name: string) => string | undefined,
): Promise<string | undefined> {
  // As upstream: a non-empty literal wins over valueFrom (validation forbids having both).
  if (e.value !== undefined && e.value !== '') return expandVars(e.value, lookup);
  const from = e.valueFrom;
  if (from === undefined) return '';
  const fieldRef = obj(from.fieldRef);
  if (fieldRef) return fieldRefValue(ctx, e.name, fieldRef);
  const resourceFieldRef = obj(from.resourceFieldRef);
  if (resourceFieldRef) return resourceFieldRefValue(ctx, e.name, resourceFieldRef);
  const cmRef = obj(from.configMapKeyRef);
  if (cmRef) return keyRefValue(cache, namespace, 'configMap', e.name, cmRef);
  const secRef = obj(from.secretKeyRef);
  if (secRef) return keyRefValue(cache, namespace, 'secret', e.name, secRef);
  // Upstream would set "" for a source it does not know; say so instead of hiding it.
  const kinds = Object.keys(from).join(', ') || '(empty)';
  throw envError('Unimplemented', e.name, `valueFrom source not supported: ${kinds}`);
}

/**
 * The container environment (upstream makeEnvironmentVariables). Warnings go to `ctx.onWarning`, or
 * are logged when it is absent. Throws a KubeletError naming the variable on errors.
 */
export async function makeEnvironment(ctx: EnvContext): Promise<KeyValue[]> {
  const { envs, warnings } = await resolveEnvironment(ctx);
  for (const w of warnings) {
    if (ctx.onWarning) ctx.onWarning(w);
    else
      ctx.logger?.warn(w.message, {
        pod: `${ctx.pod.metadata.namespace}/${ctx.pod.metadata.name}`,
        podUID: ctx.pod.metadata.uid,
        container: ctx.container.name,
        reason: w.reason,
      });
  }
  return envs;
}

/**
 * Literal values only, synchronously: what can be computed without the runtime context (no service
 * links, no valueFrom, no envFrom). Anything else fails with Unimplemented rather than silently
 * dropping a variable. The fallback of generateContainerConfig when no computed env is given.
 */
export function literalEnvironment(container: Container): KeyValue[] {
  const env = new Map<string, string>();
  for (const e of container.env ?? []) {
    if (e.valueFrom !== undefined && !(e.value !== undefined && e.value !== '')) {
      throw envError(
        'Unimplemented',
        e.name,
        `valueFrom needs the runtime's environment context (container ${container.name})`,
      );
    }
    env.set(
      e.name,
      expandVars(e.value ?? '', (n) => env.get(n)),
    );
  }
  if ((container.envFrom ?? []).length > 0) {
    throw envError(
      'Unimplemented',
      'envFrom',
      `envFrom needs the runtime's environment context (container ${container.name})`,
    );
  }
  return [...env].map(([key, value]) => ({ key, value }));
}
