/**
 * A small host-path CSI driver for tests (a fixture, never imported by src/): the Identity and Node
 * services of the CSI spec v1.2.0 on a unix socket, and a registration socket speaking the kubelet
 * plugin-registration API as node-driver-registrar does (GetInfo answers the driver's name, its
 * endpoint and supported versions; NotifyRegistrationStatus is recorded). Upstream counterparts:
 * kubernetes-csi/csi-driver-host-path (pkg/hostpath nodeserver.go) and
 * kubernetes-csi/node-driver-registrar (cmd/node-driver-registrar/node_register.go).
 *
 * A volume's data lives in `<dataDir>/<volumeId>`. In `bind` mode (root) NodeStage bind-mounts it on
 * the staging path and NodePublish bind-mounts the staged path (or the data dir) on the target; in
 * `symlink` mode (no privileges, unit tests) the target becomes a symlink to the data dir.
 * A volume asked for with a `block` capability is a sparse backing file `<dataDir>/<volumeId>.img`
 * (16 MiB). In `bind` mode NodeStage attaches it to a loop device (NodePublish does, for a driver
 * without staging), NodePublish creates the target file and bind-mounts the loop device on it,
 * NodeUnpublish unmounts and removes the target, NodeUnstage detaches the loop device (as
 * csi-driver-host-path does for its block volumes); in `symlink` mode the target becomes a symlink
 * to the backing file. Every call is recorded in `calls`; `behaviour` makes a method hang or fail
 * for the next calls. A crash is the driver run as a process (process.ts) and SIGKILLed.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { lstat, mkdir, open, readlink, rm, rmdir, stat, statfs, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import {
  Server,
  ServerCredentials,
  status as GrpcStatus,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { csiPackageDefinition, registrationPackageDefinition } from '../../../src/volume/csi/protos.ts';

const exec = promisify(execFile);

export interface DriverCall {
  service: 'Identity' | 'Node' | 'Controller' | 'Registration';
  method: string;
  request: Record<string, unknown>;
}

export interface HostPathDriverOptions {
  /** The CSI driver name (GetPluginInfo, GetInfo). */
  name: string;
  /** The driver's CSI socket (the endpoint GetInfo reports). */
  csiSocket: string;
  /** The registration socket, usually `<root-dir>/plugins_registry/<name>-reg.sock`; absent: none. */
  registrationSocket?: string;
  /** Where volumes' data live. */
  dataDir: string;
  nodeId: string;
  /** Advertise STAGE_UNSTAGE_VOLUME (default true). */
  stageUnstage?: boolean;
  /** Advertise GET_VOLUME_STATS and answer NodeGetVolumeStats from statfs (default false). */
  volumeStats?: boolean;
  maxVolumesPerNode?: number;
  topology?: Record<string, string>;
  /** GetInfo's supported_versions (default ['1.0.0']). */
  supportedVersions?: string[];
  /** The plugin type GetInfo reports (default CSIPlugin). */
  pluginType?: string;
  /** How volumes are made visible (default `bind` as root, else `symlink`). */
  mode?: 'bind' | 'symlink';
  /** Also serve the Controller service (CreateVolume/DeleteVolume), for the provisioner path. */
  controller?: boolean;
  /** Told of every call as it arrives (the driver run as a process reports them this way). */
  onCall?: (call: DriverCall) => void;
}

/** Per-method misbehaviour, changeable while the driver runs. */
export interface DriverBehaviour {
  /** Methods that never answer (the caller's deadline must end them). */
  hang: Set<string>;
  /** Methods that fail with this gRPC status. */
  fail: Map<string, { code: number; details: string }>;
}

export interface HostPathDriver {
  readonly options: HostPathDriverOptions;
  readonly calls: DriverCall[];
  readonly behaviour: DriverBehaviour;
  /** The registration statuses the kubelet sent. */
  readonly registrationStatuses: { pluginRegistered: boolean; error: string }[];
  /** The calls of one method, in order. */
  callsOf(method: string): DriverCall[];
  /** Stops serving and removes the sockets (a registrar that exits removes its socket). */
  close(): Promise<void>;
}

/** The size of a block volume's backing file. */
export const BLOCK_VOLUME_BYTES = 16 * 1024 * 1024;

/** Whether a request's VolumeCapability asks for block access. */
function isBlock(cap: unknown): boolean {
  const c = cap as { block?: unknown; accessType?: unknown } | undefined;
  return c?.accessType === 'block' || (c?.block !== undefined && c.block !== null);
}

/** Makes the sparse backing file of a block volume (kept when it exists). */
async function ensureBackingFile(file: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const fh = await open(file, 'a');
  try {
    if ((await fh.stat()).size < BLOCK_VOLUME_BYTES) await fh.truncate(BLOCK_VOLUME_BYTES);
  } finally {
    await fh.close();
  }
}

/** The loop devices attached to `file` (`losetup -j`). */
async function loopDevicesOf(file: string): Promise<string[]> {
  const { stdout } = await exec('losetup', ['-j', file]);
  return stdout
    .split('\n')
    .map((l) => l.split(':')[0]?.trim() ?? '')
    .filter((d) => d.startsWith('/dev/'));
}

/** The loop device of `file`, attached now when it has none. */
async function attachLoop(file: string): Promise<string> {
  const [existing] = await loopDevicesOf(file);
  if (existing) return existing;
  const { stdout } = await exec('losetup', ['-f', '--show', file]);
  return stdout.trim();
}

async function detachLoops(file: string): Promise<void> {
  for (const dev of await loopDevicesOf(file)) await exec('losetup', ['-d', dev]);
}

async function bindMount(source: string, target: string): Promise<void> {
  await exec('mount', ['--bind', source, target]);
}

async function isMountPoint(p: string): Promise<boolean> {
  try {
    await exec('mountpoint', ['-q', p]);
    return true;
  } catch {
    // mountpoint exits non-zero for "not a mount point" and for a missing path alike.
    return false;
  }
}

/** A gRPC status the fixture answers with (thrown by a handler). */
class GrpcStatusError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, details: string) {
    super(details);
    this.code = code;
    this.details = details;
  }
}

function grpcError(code: number, details: string): GrpcStatusError {
  return new GrpcStatusError(code, details);
}

async function serve(
  socket: string,
  services: [ServiceDefinition, UntypedServiceImplementation][],
): Promise<Server> {
  await mkdir(path.dirname(socket), { recursive: true });
  await rm(socket, { force: true });
  const server = new Server();
  for (const [def, impl] of services) server.addService(def, impl);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  return server;
}

/** Starts the driver (CSI socket first, then the registration socket, as a registrar waits for the driver). */
export async function startHostPathDriver(options: HostPathDriverOptions): Promise<HostPathDriver> {
  const mode = options.mode ?? (process.getuid?.() === 0 ? 'bind' : 'symlink');
  const calls: DriverCall[] = [];
  const registrationStatuses: { pluginRegistered: boolean; error: string }[] = [];
  const behaviour: DriverBehaviour = { hang: new Set(), fail: new Map() };
  const volumeDir = (id: string) => path.join(options.dataDir, id.replace(/[^A-Za-z0-9._-]/g, '_'));
  const backingFile = (id: string) => `${volumeDir(id)}.img`;
  const exists = (p: string) =>
    lstat(p).then(
      () => true,
      () => false,
    );

  /** Wraps a handler: records the call, applies the behaviour, maps thrown errors to INTERNAL. */
  const method =
    (
      service: DriverCall['service'],
      name: string,
      fn: (req: Record<string, unknown>) => Promise<object> | object,
    ) =>
    (call: ServerUnaryCall<Record<string, unknown>, object>, cb: sendUnaryData<object>): void => {
      const record = { service, method: name, request: call.request };
      calls.push(record);
      options.onCall?.(record);
      if (behaviour.hang.has(name)) return; // never answers; the client's deadline ends the call
      const failure = behaviour.fail.get(name);
      if (failure) {
        cb(failure);
        return;
      }
      Promise.resolve()
        .then(() => fn(call.request))
        .then(
          (res) => cb(null, res),
          (err: unknown) => {
            const e = err as { code?: unknown; details?: unknown };
            if (typeof e.code === 'number' && typeof e.details === 'string')
              cb({ code: e.code, details: e.details });
            else cb(grpcError(GrpcStatus.INTERNAL, String(err)));
          },
        );
    };

  const str = (req: Record<string, unknown>, key: string): string => {
    const v = req[key];
    if (typeof v !== 'string' || v === '')
      throw grpcError(GrpcStatus.INVALID_ARGUMENT, `${key} missing in request`);
    return v;
  };

  const identity: UntypedServiceImplementation = {
    GetPluginInfo: method('Identity', 'GetPluginInfo', () => ({
      name: options.name,
      vendorVersion: '0.1.0-fixture',
    })),
    GetPluginCapabilities: method('Identity', 'GetPluginCapabilities', () => ({
      capabilities: options.controller ? [{ service: { type: 'CONTROLLER_SERVICE' } }] : [],
    })),
    Probe: method('Identity', 'Probe', () => ({ ready: { value: true } })),
  };

  const node: UntypedServiceImplementation = {
    NodeGetInfo: method('Node', 'NodeGetInfo', () => ({
      nodeId: options.nodeId,
      maxVolumesPerNode: options.maxVolumesPerNode ?? 0,
      ...(options.topology ? { accessibleTopology: { segments: options.topology } } : {}),
    })),
    NodeGetCapabilities: method('Node', 'NodeGetCapabilities', () => ({
      capabilities: [
        ...((options.stageUnstage ?? true) ? [{ rpc: { type: 'STAGE_UNSTAGE_VOLUME' } }] : []),
        ...(options.volumeStats ? [{ rpc: { type: 'GET_VOLUME_STATS' } }] : []),
      ],
    })),
    NodeStageVolume: method('Node', 'NodeStageVolume', async (req) => {
      const id = str(req, 'volumeId');
      const staging = str(req, 'stagingTargetPath');
      if (!req.volumeCapability) throw grpcError(GrpcStatus.INVALID_ARGUMENT, 'volume capability missing');
      if (!(options.stageUnstage ?? true))
        throw grpcError(GrpcStatus.UNIMPLEMENTED, 'no STAGE_UNSTAGE_VOLUME');
      // The CO creates the staging path (spec: NodeStageVolume "staging_target_path ... MUST exist").
      const st = await stat(staging).catch(() => undefined);
      if (!st?.isDirectory())
        throw grpcError(GrpcStatus.FAILED_PRECONDITION, `staging path ${staging} is not a directory`);
      if (isBlock(req.volumeCapability)) {
        await ensureBackingFile(backingFile(id));
        if (mode === 'bind') await attachLoop(backingFile(id));
        return {};
      }
      await mkdir(volumeDir(id), { recursive: true });
      if (mode === 'bind' && !(await isMountPoint(staging))) await bindMount(volumeDir(id), staging);
      return {};
    }),
    NodeUnstageVolume: method('Node', 'NodeUnstageVolume', async (req) => {
      const id = str(req, 'volumeId');
      const staging = str(req, 'stagingTargetPath');
      if (mode === 'bind' && (await isMountPoint(staging))) await exec('umount', [staging]);
      if (mode === 'bind' && (await exists(backingFile(id)))) await detachLoops(backingFile(id));
      return {};
    }),
    NodePublishVolume: method('Node', 'NodePublishVolume', async (req) => {
      const id = str(req, 'volumeId');
      const target = str(req, 'targetPath');
      if (!req.volumeCapability) throw grpcError(GrpcStatus.INVALID_ARGUMENT, 'volume capability missing');
      const staging = typeof req.stagingTargetPath === 'string' ? req.stagingTargetPath : '';
      const context = (req.volumeContext ?? {}) as Record<string, string>;
      const ephemeral = context['csi.storage.k8s.io/ephemeral'] === 'true';
      if ((options.stageUnstage ?? true) && !staging && !ephemeral)
        throw grpcError(GrpcStatus.FAILED_PRECONDITION, 'staging target path missing for a staging driver');
      if (isBlock(req.volumeCapability)) {
        // The CO makes the target's parent, the driver the target (a file here).
        if (!(await stat(path.dirname(target)).catch(() => undefined))?.isDirectory())
          throw grpcError(GrpcStatus.FAILED_PRECONDITION, `the parent of ${target} is not a directory`);
        const file = backingFile(id);
        if (staging && !(await exists(file)))
          throw grpcError(GrpcStatus.FAILED_PRECONDITION, `block volume ${id} is not staged`);
        await ensureBackingFile(file);
        if (mode === 'bind') {
          const [staged] = await loopDevicesOf(file);
          if (staging && !staged)
            throw grpcError(GrpcStatus.FAILED_PRECONDITION, `block volume ${id} has no loop device`);
          const dev = staged ?? (await attachLoop(file));
          if (!(await isMountPoint(target))) {
            const fh = await open(target, 'a');
            await fh.close();
            await bindMount(dev, target);
          }
        } else if ((await readlink(target).catch(() => undefined)) === undefined) {
          await symlink(file, target);
        }
        return {};
      }
      await mkdir(volumeDir(id), { recursive: true });
      if (mode === 'bind') {
        // The driver creates the target (upstream hostpath: MkdirAll(targetPath)).
        await mkdir(target, { recursive: true });
        if (!(await isMountPoint(target))) {
          await bindMount(staging || volumeDir(id), target);
          if (req.readonly === true) await exec('mount', ['-o', 'remount,bind,ro', target]);
        }
      } else {
        const existing = await readlink(target).catch(() => undefined);
        if (existing === undefined) await symlink(volumeDir(id), target);
      }
      return {};
    }),
    NodeUnpublishVolume: method('Node', 'NodeUnpublishVolume', async (req) => {
      const id = str(req, 'volumeId');
      const target = str(req, 'targetPath');
      if (mode === 'bind') {
        if (await isMountPoint(target)) await exec('umount', [target]);
        const st = await lstat(target).catch(() => undefined);
        if (st?.isDirectory()) await rmdir(target);
        else if (st) await unlink(target); // a block volume's target file
        // Without staging, publish attached the loop device: unpublish detaches it.
        if (!(options.stageUnstage ?? true) && (await exists(backingFile(id))))
          await detachLoops(backingFile(id));
      } else {
        await unlink(target).catch((err: unknown) => {
          if ((err as { code?: string }).code !== 'ENOENT') throw err;
        });
      }
      return {};
    }),
    NodeGetVolumeStats: method('Node', 'NodeGetVolumeStats', async (req) => {
      if (!options.volumeStats) throw grpcError(GrpcStatus.UNIMPLEMENTED, 'no GET_VOLUME_STATS');
      const id = str(req, 'volumeId');
      str(req, 'volumePath');
      const fs = await statfs(volumeDir(id)).catch(() => {
        throw grpcError(GrpcStatus.NOT_FOUND, `volume ${id} not found`);
      });
      return {
        usage: [
          {
            unit: 'BYTES',
            total: fs.blocks * fs.bsize,
            available: fs.bavail * fs.bsize,
            used: (fs.blocks - fs.bfree) * fs.bsize,
          },
          { unit: 'INODES', total: fs.files, available: fs.ffree, used: fs.files - fs.ffree },
        ],
      };
    }),
    NodeExpandVolume: method('Node', 'NodeExpandVolume', () => {
      throw grpcError(GrpcStatus.UNIMPLEMENTED, 'no EXPAND_VOLUME');
    }),
  };

  /** Controller: volumes are directories named after the request (CreateVolume is idempotent by name). */
  const controller: UntypedServiceImplementation = {
    ControllerGetCapabilities: method('Controller', 'ControllerGetCapabilities', () => ({
      capabilities: [{ rpc: { type: 'CREATE_DELETE_VOLUME' } }],
    })),
    CreateVolume: method('Controller', 'CreateVolume', async (req) => {
      const name = str(req, 'name');
      const range = (req.capacityRange ?? {}) as { requiredBytes?: number };
      const caps = Array.isArray(req.volumeCapabilities) ? (req.volumeCapabilities as unknown[]) : [];
      if (caps.some(isBlock)) await ensureBackingFile(backingFile(name));
      else await mkdir(volumeDir(name), { recursive: true });
      return {
        volume: {
          volumeId: name,
          capacityBytes: range.requiredBytes ?? 0,
          volumeContext: {},
          ...(options.topology ? { accessibleTopology: [{ segments: options.topology }] } : {}),
        },
      };
    }),
    DeleteVolume: method('Controller', 'DeleteVolume', async (req) => {
      const id = str(req, 'volumeId');
      await rm(volumeDir(id), { recursive: true, force: true });
      await rm(backingFile(id), { force: true });
      return {};
    }),
    ValidateVolumeCapabilities: method('Controller', 'ValidateVolumeCapabilities', (req) => ({
      confirmed: { volumeCapabilities: req.volumeCapabilities },
    })),
  };

  const csiDef = csiPackageDefinition();
  const csiServer = await serve(options.csiSocket, [
    [csiDef['csi.v1.Identity'] as ServiceDefinition, identity],
    [csiDef['csi.v1.Node'] as ServiceDefinition, node],
    ...(options.controller
      ? [
          [csiDef['csi.v1.Controller'] as ServiceDefinition, controller] as [
            ServiceDefinition,
            UntypedServiceImplementation,
          ],
        ]
      : []),
  ]);

  let regServer: Server | undefined;
  if (options.registrationSocket) {
    const registration: UntypedServiceImplementation = {
      GetInfo: method('Registration', 'GetInfo', () => ({
        type: options.pluginType ?? 'CSIPlugin',
        name: options.name,
        endpoint: options.csiSocket,
        supportedVersions: options.supportedVersions ?? ['1.0.0'],
      })),
      NotifyRegistrationStatus: method('Registration', 'NotifyRegistrationStatus', (req) => {
        registrationStatuses.push({
          pluginRegistered: req.pluginRegistered === true,
          error: typeof req.error === 'string' ? req.error : '',
        });
        return {};
      }),
    };
    const regDef = registrationPackageDefinition()['pluginregistration.Registration'] as ServiceDefinition;
    regServer = await serve(options.registrationSocket, [[regDef, registration]]);
  }

  const shutdown = (s: Server) => new Promise<void>((resolve) => s.tryShutdown(() => resolve()));
  return {
    options,
    calls,
    behaviour,
    registrationStatuses,
    callsOf: (name) => calls.filter((c) => c.method === name),
    async close() {
      if (regServer) {
        regServer.forceShutdown();
        await rm(options.registrationSocket ?? '', { force: true });
      }
      csiServer.forceShutdown();
      await shutdown(csiServer);
      await rm(options.csiSocket, { force: true });
    },
  };
}
