/**
 * Test helpers for the CSI side: a FakeApi that keeps one Node and its CSINode the way the API
 * server would (GET, POST, PUT, the status subresource's strategic merge patch), a fixture
 * driver's options laid out under a kubelet root dir, and the bed the CSI suites share (the fake
 * API, a started CSI side on a temp root, fixture drivers). No upstream counterpart (upstream's
 * tests use client-go's fake clientset).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  startHostPathDriver,
  type HostPathDriver,
  type HostPathDriverOptions,
} from '../../../test/kit/csi-hostpath/driver.ts';
import { FakeApi, apiError, applyStrategicMergePatch } from '../../api/testing.ts';
import type { ApiRequest } from '../../api/client-types.ts';
import { nullLogger } from '../../util/logger.ts';
import { createCsi, type Csi, type CsiOptions } from './index.ts';
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

/** The bed's node and the fixture driver's name. */
export const BED_NODE = 'node-a';
export const BED_DRIVER = 'hostpath.csi.example.com';

export interface CsiTestBedOptions {
  /** The temp root's name prefix (one per suite, to tell leftovers apart). */
  prefix: string;
  /** The fixture driver's CSIDriver spec in the fake API; none (attach required) when left out. */
  csiDriverSpec?: Record<string, unknown>;
  /** The CSI side's deadline for a driver call; 400 ms when left out. */
  callTimeoutMs?: number;
}

/** A fake API with one Node, a started CSI side on a temp root, fixture drivers: gone at close(). */
export interface CsiTestBed {
  root: string;
  fake: FakeNodeApi;
  /** The CSI side under test, started. */
  csi: Csi;
  /** The node events of every CSI side of the bed, as "type reason message". */
  events: string[];
  /** Another CSI side on the same root and API (another kubelet process), started. */
  newCsi(opts?: Pick<CsiOptions, 'callTimeoutMs'>): Promise<Csi>;
  /** Starts a fixture driver (node ID fixture-node-a, symlink mode) with its sockets under the root. */
  startDriver(extra?: Partial<HostPathDriverOptions>): Promise<HostPathDriver>;
  /** startDriver, then its registration through the plugin watcher; its call log starts empty. */
  registerDriver(extra?: Partial<HostPathDriverOptions>): Promise<HostPathDriver>;
  /** Stops every CSI side, closes every driver and removes the root. */
  close(): Promise<void>;
}

export async function csiTestBed(opts: CsiTestBedOptions): Promise<CsiTestBed> {
  const root = await mkdtemp(path.join(tmpdir(), opts.prefix));
  const fake = fakeNodeApi(BED_NODE);
  if (opts.csiDriverSpec) fake.csiDrivers.set(BED_DRIVER, { spec: opts.csiDriverSpec });
  const events: string[] = [];
  const sides: Csi[] = [];
  const drivers: HostPathDriver[] = [];
  const newCsi = async (o: Pick<CsiOptions, 'callTimeoutMs'> = {}): Promise<Csi> => {
    const c = createCsi({
      rootDir: root,
      nodeName: BED_NODE,
      api: fake.api,
      logger: nullLogger,
      nodeEvent: (type, reason, message) => events.push(`${type} ${reason} ${message}`),
      reconcilePeriodMs: 60_000,
      callTimeoutMs: o.callTimeoutMs ?? opts.callTimeoutMs ?? 400,
    });
    sides.push(c);
    await c.start(new AbortController().signal);
    return c;
  };
  const startDriver = async (extra: Partial<HostPathDriverOptions> = {}): Promise<HostPathDriver> => {
    const d = await startHostPathDriver({
      name: BED_DRIVER,
      ...fixtureSockets(root, extra.name ?? BED_DRIVER),
      dataDir: path.join(root, 'data'),
      nodeId: 'fixture-node-a',
      mode: 'symlink',
      ...extra,
    });
    drivers.push(d);
    return d;
  };
  const csi = await newCsi();
  return {
    root,
    fake,
    csi,
    events,
    newCsi,
    startDriver,
    async registerDriver(extra) {
      const d = await startDriver(extra);
      await csi.watcher.reconcileNow();
      assert.ok(csi.drivers.get(d.options.name), 'the fixture registered');
      d.calls.length = 0;
      return d;
    },
    async close() {
      for (const c of sides) await c.stop();
      for (const d of drivers) await d.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
