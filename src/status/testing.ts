/**
 * Test helpers for this folder (not exported from any index): a fake API server for
 * `pods/<name>/status`, to plug into `FakeApi` (src/api/testing.ts).
 */
import { ApiError, type ApiRequest } from '../api/client-types.ts';
import { applyStrategicMergePatch } from '../api/testing.ts';
import type { Pod } from '../api/types.ts';

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
