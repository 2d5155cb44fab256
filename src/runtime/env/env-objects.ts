/**
 * ConfigMaps and Secrets in the environment (upstream makeEnvironmentVariables' envFrom loop and
 * its configMapKeyRef/secretKeyRef cases): each object read once per container start, secrets
 * base64-decoded, optional references skipped when missing, envFrom keys checked as names.
 */
import type { Container } from '../../api/types.ts';
import { abortReason, combineSignals, untilAborted } from '../../util/abort.ts';
import { describeError, isKubeletError } from '../../util/errors.ts';
import type { ConfigMap, Secret } from '../../volume/index.ts';
import { envError, obj, str, type EnvContext, type EnvWarning } from './env-context.ts';

const REASON_INVALID_ENV_NAMES = 'InvalidEnvironmentVariableNames';
/** How long one ConfigMap/Secret read may take before the container start fails (and is retried). */
const OBJECT_READ_TIMEOUT_MS = 30_000;

// ---- names (upstream validation.IsEnvVarName, as the 1.20 kubelet applied it to envFrom keys) ----

const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

export function isEnvVarName(s: string): boolean {
  return ENV_VAR_NAME.test(s) && s !== '.' && !s.startsWith('..');
}

type Kind = 'configMap' | 'secret';

/** Per call, each object is read once however many variables name it (as upstream). */
export class ObjectCache {
  readonly #ctx: EnvContext;
  readonly #namespace: string;
  readonly #configMaps = new Map<string, ConfigMap | undefined>();
  readonly #secrets = new Map<string, Secret | undefined>();

  constructor(ctx: EnvContext, namespace: string) {
    this.#ctx = ctx;
    this.#namespace = namespace;
  }

  /**
   * The object, or undefined when NotFound. Standalone (no API) fails with FailedPrecondition naming
   * what needed the API; any other read failure is rethrown naming the variable.
   */
  async get(
    kind: Kind,
    objName: string,
    varName: string,
    what: string,
  ): Promise<Record<string, string> | undefined> {
    const { objects, signal } = this.#ctx;
    const ref = `${this.#namespace}/${objName}`;
    if (objects === undefined) {
      throw envError(
        'FailedPrecondition',
        varName,
        `${what} needs an API server (cluster mode): couldn't get ${kind} ${ref}`,
      );
    }
    const cache = kind === 'configMap' ? this.#configMaps : this.#secrets;
    if (!cache.has(objName)) {
      const readSignal = combineSignals([signal], OBJECT_READ_TIMEOUT_MS);
      try {
        const read =
          kind === 'configMap'
            ? objects.getConfigMap(this.#namespace, objName, readSignal)
            : objects.getSecret(this.#namespace, objName, readSignal);
        cache.set(objName, await untilAborted(read, readSignal));
      } catch (err) {
        if (signal?.aborted) throw abortReason(signal);
        const code = readSignal.aborted ? 'DeadlineExceeded' : isKubeletError(err) ? err.code : 'Unavailable';
        throw envError(code, varName, `couldn't get ${kind} ${ref}: ${describeError(err)}`, err);
      }
    }
    const obj = cache.get(objName);
    if (obj === undefined) return undefined;
    const data = obj.data ?? {};
    if (kind === 'configMap') return data;
    return Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
  }
}

/** Upstream's NotFound wording from the kubelet's configmap/secret managers. */
function notFound(kind: Kind, objName: string): string {
  return `${kind === 'configMap' ? 'configmap' : 'secret'} "${objName}" not found`;
}

/** The value of a `configMapKeyRef`/`secretKeyRef`; undefined when optional and missing. */
export async function keyRefValue(
  cache: ObjectCache,
  namespace: string,
  kind: Kind,
  name: string,
  ref: Record<string, unknown>,
): Promise<string | undefined> {
  const objName = str(ref.name);
  const key = str(ref.key);
  const optional = ref.optional === true;
  const what = kind === 'configMap' ? 'configMapKeyRef' : 'secretKeyRef';
  const data = await cache.get(kind, objName, name, what);
  if (data === undefined) {
    if (optional) return undefined;
    throw envError('NotFound', name, notFound(kind, objName));
  }
  if (!Object.hasOwn(data, key)) {
    if (optional) return undefined;
    const label = kind === 'configMap' ? 'ConfigMap' : 'Secret';
    throw envError('NotFound', name, `couldn't find key ${key} in ${label} ${namespace}/${objName}`);
  }
  return data[key];
}

/**
 * The variables of `container.envFrom`, in order (a later source overrides an earlier one). Keys
 * that are not valid names are skipped with an InvalidEnvironmentVariableNames warning naming them,
 * as the 1.20 kubelet did.
 */
export async function envFromVariables(
  cache: ObjectCache,
  namespace: string,
  container: Container,
): Promise<{ env: Map<string, string>; warnings: EnvWarning[] }> {
  const env = new Map<string, string>();
  const warnings: EnvWarning[] = [];
  for (const [i, raw] of (container.envFrom ?? []).entries()) {
    const src = obj(raw) ?? {};
    const prefix = str(src.prefix);
    const cmRef = obj(src.configMapRef);
    const secRef = obj(src.secretRef);
    const ref = cmRef ?? secRef;
    if (ref === undefined) {
      throw envError('InvalidArgument', `envFrom[${i}]`, 'needs configMapRef or secretRef');
    }
    const kind: Kind = cmRef ? 'configMap' : 'secret';
    const objName = str(ref.name);
    const data = await cache.get(kind, objName, `envFrom[${i}]`, `envFrom ${kind}Ref`);
    if (data === undefined) {
      if (ref.optional === true) continue;
      throw envError('NotFound', `envFrom[${i}]`, notFound(kind, objName));
    }
    const invalid: string[] = [];
    for (const k of Object.keys(data).sort()) {
      const key = prefix + k;
      if (!isEnvVarName(key)) {
        invalid.push(key);
        continue;
      }
      env.set(key, data[k] ?? '');
    }
    if (invalid.length > 0) {
      warnings.push({
        reason: REASON_INVALID_ENV_NAMES,
        message: `Keys [${invalid.join(', ')}] from the EnvFrom ${kind} ${namespace}/${objName} were skipped since they are considered invalid environment variable names.`,
      });
    }
  }
  return { env, warnings };
}
