/**
 * Test helpers for the CSI side: a FakeApi that keeps one Node and its CSINode the way the API
 * server would (GET, POST, PUT, the status subresource's strategic merge patch), and a fixture
 * driver's options laid out under a kubelet root dir. No upstream counterpart (upstream's tests use
 * client-go's fake clientset).
 */
import path from 'node:path';
import { FakeApi, apiError, applyStrategicMergePatch } from '../../api/testing.ts';
import type { ApiRequest } from '../../api/client-types.ts';
import type { CSINode } from './node-info.ts';
import { pluginsRegistryDir } from './paths.ts';

export interface FakeNodeApi {
  api: FakeApi;
  node(): {
    metadata: {
      name: string;
      uid: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    };
  };
  csiNode(): CSINode | undefined;
  csiDrivers: Map<string, object>;
}

export function fakeNodeApi(nodeName: string): FakeNodeApi {
  const api = new FakeApi();
  let node: ReturnType<FakeNodeApi['node']> = { metadata: { name: nodeName, uid: 'node-uid-1', labels: {} } };
  let csiNode: CSINode | undefined;
  let rv = 1;
  const csiDrivers = new Map<string, object>();
  const nodePath = `/api/v1/nodes/${nodeName}`;
  const csiNodePath = `/apis/storage.k8s.io/v1/csinodes/${nodeName}`;
  api.respond('GET', nodePath, () => node);
  api.respond('PATCH', `${nodePath}/status`, (req: ApiRequest) => {
    node = applyStrategicMergePatch(node, req.body) as typeof node;
    return node;
  });
  api.respond('GET', csiNodePath, () => csiNode ?? apiError(404, 'NotFound'));
  api.respond('POST', '/apis/storage.k8s.io/v1/csinodes', (req: ApiRequest) => {
    if (csiNode) return apiError(409, 'AlreadyExists');
    csiNode = {
      ...(req.body as CSINode),
      metadata: { ...(req.body as CSINode).metadata, resourceVersion: String(rv++) },
    };
    return csiNode;
  });
  api.respond('PUT', csiNodePath, (req: ApiRequest) => {
    const body = req.body as CSINode;
    if (!csiNode) return apiError(404, 'NotFound');
    if (body.metadata.resourceVersion !== csiNode.metadata.resourceVersion) return apiError(409, 'Conflict');
    csiNode = { ...body, metadata: { ...body.metadata, resourceVersion: String(rv++) } };
    return csiNode;
  });
  api.respond('GET', /^\/apis\/storage\.k8s\.io\/v1\/csidrivers\//, (req: ApiRequest) => {
    const d = csiDrivers.get(decodeURIComponent(req.path.split('/').pop() ?? ''));
    return d ?? apiError(404, 'NotFound');
  });
  return { api, node: () => node, csiNode: () => csiNode, csiDrivers };
}

/** Where a node-driver-registrar would put the fixture's sockets under `rootDir`. */
export function fixtureSockets(
  rootDir: string,
  driver: string,
): { csiSocket: string; registrationSocket: string } {
  return {
    csiSocket: path.join(rootDir, 'plugins', driver, 'csi.sock'),
    registrationSocket: path.join(pluginsRegistryDir(rootDir), `${driver}-reg.sock`),
  };
}
