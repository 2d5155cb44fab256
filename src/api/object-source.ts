import type { ApiClient } from './client-types.ts';
import { isNotFound } from '../util/errors.ts';
import type { ConfigMap, Secret, VolumeObjectSource } from '../volume/index.ts';

/**
 * Secrets and ConfigMaps for volumes, read from the API server through a short TTL cache (upstream
 * cacheBasedManager, default TTL about a minute; ours 10 s so updates reach pods quickly). NotFound
 * is `undefined`; any other error rejects, so an outage is never mistaken for a deleted object.
 */
export function createApiObjectSource(
  api: ApiClient,
  ttlMs = 10_000,
  now: () => number = Date.now,
): VolumeObjectSource {
  const cache = new Map<string, { at: number; value: unknown }>();
  async function get<T>(path: string, signal?: AbortSignal): Promise<T | undefined> {
    const hit = cache.get(path);
    if (hit && now() - hit.at < ttlMs) return hit.value as T | undefined;
    let value: T | undefined;
    try {
      value = await api.request<T>({ method: 'GET', path, signal });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      value = undefined;
    }
    cache.set(path, { at: now(), value });
    if (cache.size > 1000) cache.delete(cache.keys().next().value as string);
    return value;
  }
  return {
    getSecret: (ns, name, signal) => get<Secret>(`/api/v1/namespaces/${ns}/secrets/${name}`, signal),
    getConfigMap: (ns, name, signal) => get<ConfigMap>(`/api/v1/namespaces/${ns}/configmaps/${name}`, signal),
  };
}
