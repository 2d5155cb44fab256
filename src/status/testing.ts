/**
 * Test helpers for this folder (not exported from any index): applying a pod status strategic
 * merge patch the way the API server does, and a fake API server for `pods/<name>/status`.
 */
import { ApiError, type ApiRequest } from '../api/client-types.ts';
import type { Pod } from '../api/types.ts';

type Obj = Record<string, unknown>;

/** Merge keys of the lists our patches touch, by JSON path (core/v1 Pod). */
const MERGE_KEYS: Readonly<Record<string, string>> = {
  'status.conditions': 'type',
  'status.podIPs': 'ip',
  'status.hostIPs': 'ip',
};

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Applies a strategic merge patch as the API server does for the parts pod status patches use:
 * maps merge (null deletes), merge-keyed lists merge by key (`$patch: delete`, `$setElementOrder`
 * with the server's other items first, in their order), other lists and scalars are replaced.
 */
export function applyStrategicMergePatch(target: unknown, patch: unknown, path = ''): unknown {
  if (!isObj(patch)) return patch;
  const out: Obj = isObj(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$setElementOrder/')) continue;
    const p = path === '' ? k : `${path}.${k}`;
    if (v === null) {
      delete out[k];
      continue;
    }
    const mergeKey = MERGE_KEYS[p];
    if (Array.isArray(v) && mergeKey !== undefined) {
      const list = (Array.isArray(out[k]) ? [...(out[k] as unknown[])] : []) as Obj[];
      for (const e of v as Obj[]) {
        const i = list.findIndex((x) => x[mergeKey] === e[mergeKey]);
        if (e['$patch'] === 'delete') {
          if (i >= 0) list.splice(i, 1);
        } else if (i >= 0) {
          list[i] = applyStrategicMergePatch(list[i], e, p) as Obj;
        } else {
          list.push(e);
        }
      }
      out[k] = list;
      continue;
    }
    out[k] = isObj(v) ? applyStrategicMergePatch(out[k], v, p) : v;
  }
  // $setElementOrder orders the merged list, also when the patch changed none of its items.
  for (const [directive, order] of Object.entries(patch)) {
    if (!directive.startsWith('$setElementOrder/') || !Array.isArray(order)) continue;
    const k = directive.slice('$setElementOrder/'.length);
    const mergeKey = MERGE_KEYS[path === '' ? k : `${path}.${k}`];
    const list = out[k];
    if (mergeKey === undefined || !Array.isArray(list)) continue;
    const rank = (e: unknown) => order.findIndex((o) => isObj(o) && isObj(e) && o[mergeKey] === e[mergeKey]);
    // Stable: items the order does not name (rank -1) keep their relative order, first.
    out[k] = [...(list as unknown[])].sort((a, b) => rank(a) - rank(b));
  }
  return out;
}

/**
 * A tiny API server for `PATCH /api/v1/namespaces/<ns>/pods/<name>/status` (strategic merge):
 * 404 for an unknown pod, 409 when the patch's `metadata.uid` names another pod, a new
 * resourceVersion per write. Tests change pods behind the kubelet's back with `edit`.
 */
export class FakePodStatusServer {
  readonly pods = new Map<string, Pod>();
  private rv = 100;

  add(pod: Pod): Pod {
    const p = structuredClone(pod);
    p.metadata.resourceVersion = String(++this.rv);
    this.pods.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    return structuredClone(p);
  }

  get(namespace: string, name: string): Pod | undefined {
    const p = this.pods.get(`${namespace}/${name}`);
    return p ? structuredClone(p) : undefined;
  }

  /** Someone else writes the pod (e.g. a readiness-gate controller sets a condition). */
  edit(namespace: string, name: string, change: (pod: Pod) => void): Pod {
    const p = this.pods.get(`${namespace}/${name}`);
    if (!p) throw new Error(`no pod ${namespace}/${name}`);
    change(p);
    p.metadata.resourceVersion = String(++this.rv);
    return structuredClone(p);
  }

  /** The reply function for FakeApi.respond('PATCH', <status path>, …). */
  readonly patch = (req: ApiRequest): Pod => {
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/status$/.exec(req.path);
    if (!m) throw new ApiError('fake', 404, 'NotFound', `no route ${req.path}`);
    if (req.contentType !== 'application/strategic-merge-patch+json') {
      throw new ApiError('fake', 415, 'UnsupportedMediaType', `unexpected ${req.contentType}`);
    }
    const key = `${m[1]}/${m[2]}`;
    const pod = this.pods.get(key);
    if (!pod) throw new ApiError('fake', 404, 'NotFound', `pods "${m[2]}" not found`);
    const body = req.body as { metadata?: { uid?: string }; status?: unknown };
    const uid = body.metadata?.uid;
    if (uid !== undefined && uid !== pod.metadata.uid) {
      throw new ApiError('fake', 409, 'Conflict', `Precondition failed: UID in precondition: ${uid}`);
    }
    const status = applyStrategicMergePatch(pod.status ?? {}, body.status ?? {}, 'status');
    const next: Pod = { ...pod, status: status as Pod['status'] };
    next.metadata = { ...pod.metadata, resourceVersion: String(++this.rv) };
    this.pods.set(key, next);
    return structuredClone(next);
  };
}
