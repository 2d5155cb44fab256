/**
 * CRI RuntimeService in memory, for unit tests (upstream cri-api `apis/testing` FakeRuntimeService);
 * import it from testing.ts. It behaves as containerd does wherever the kubelet can tell: sandbox and
 * container IDs reserve their names (a second RunPodSandbox/CreateContainer with the same metadata is
 * AlreadyExists), created → running → exited, stopping a sandbox SIGKILLs its live containers,
 * removing a sandbox removes them, removing a running container kills it, removing something already
 * gone succeeds while stopping it or asking for its status is NotFound, StartContainer needs a ready
 * sandbox, stopping a container that is not running does nothing, a host-network sandbox has no IP,
 * a runtime handler it has not configured fails RunPodSandbox as containerd's CRI plugin does.
 */
import { join } from 'node:path';
import { LABEL_POD_UID } from '../../config/defaults.ts';
import { FakeCriService, criError } from './fake-service.ts';
import { cloneJson } from '../../util/json.ts';
import type {
  CallOptions,
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerState,
  ContainerStats,
  ContainerStatsFilter,
  ContainerStatus,
  ExecSyncResult,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxFilter,
  PodSandboxStats,
  PodSandboxStatsFilter,
  PodSandboxStatus,
  RuntimeCondition,
  RuntimeService,
  RuntimeStatus,
  StreamFlags,
  VersionInfo,
} from './types.ts';

/** A sandbox as the fake holds it. */
export interface FakeSandbox {
  status: PodSandboxStatus;
  /** The config's log directory: container log paths are relative to it. */
  logDirectory: string;
}

/** A container as the fake holds it. */
export interface FakeContainer {
  status: ContainerStatus;
  podSandboxId: string;
  config: ContainerConfig;
}

type RuntimeMethod = keyof RuntimeService;

const matchesLabels = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);

/** CRI RuntimeService in memory; see the file comment. */
export class FakeRuntimeService extends FakeCriService<RuntimeMethod> implements RuntimeService {
  readonly sandboxes = new Map<string, FakeSandbox>();
  readonly containers = new Map<string, FakeContainer>();
  /**
   * Containers (by ID or container name) whose process ignores SIGTERM: StopContainer then takes
   * the whole grace period (on the clock) before the SIGKILL (exit code 137).
   */
  readonly ignoreSigterm = new Set<string>();
  /**
   * Containers (by ID or name) whose process cannot start: StartContainer fails as containerd's
   * does and leaves the container exited with code 128, reason StartError and this message.
   */
  readonly startErrors = new Map<string, string>();
  /**
   * The runtime handlers configured (containerd's `runtimes` table); '' is the default one. Every
   * other handler fails RunPodSandbox with containerd's message.
   */
  readonly runtimeHandlers = new Set(['runc']);
  /** Exit code of a process that SIGTERM stops. */
  sigtermExitCode = 143;
  /** What Status answers. */
  conditions: RuntimeCondition[] = [
    { type: 'RuntimeReady', status: true, reason: '', message: '' },
    { type: 'NetworkReady', status: true, reason: '', message: '' },
  ];
  /** What a verbose Status answers as `info` (containerd: `config`, its CRI plugin config JSON). */
  info: Record<string, string> = {};
  /** What ExecSync answers (the container exists and runs). */
  execResult: (containerId: string, cmd: string[]) => ExecSyncResult = () => ({
    stdout: Buffer.alloc(0),
    stderr: Buffer.alloc(0),
    exitCode: 0,
  });
  private nextIP = 2;
  private nextSession = 1;

  /** Simulates the container's process exiting by itself (a crash when `code` ≠ 0). */
  exitContainer(id: string, code: number, reason?: string): void {
    const c = this.containers.get(id);
    if (c?.status.state !== 'CONTAINER_RUNNING') throw new Error(`fake CRI: container ${id} is not running`);
    this.exit(c, code, reason);
  }

  /** Simulates the sandbox dying (its containers keep their states). */
  setSandboxNotReady(id: string): void {
    const sb = this.sandboxes.get(id);
    if (!sb) throw new Error(`fake CRI: no sandbox ${id}`);
    sb.status.state = 'SANDBOX_NOTREADY';
  }

  /** The newest container with this name (metadata), optionally of one pod (by its UID label). */
  latestContainer(name: string, podUID?: string): FakeContainer | undefined {
    const all = [...this.containers.values()].filter(
      (c) =>
        c.status.metadata.name === name &&
        (podUID === undefined || c.status.labels[LABEL_POD_UID] === podUID),
    );
    return all.at(-1);
  }

  version(opts?: CallOptions): Promise<VersionInfo> {
    return this.call('version', [], opts, () => ({
      version: '0.1.0',
      runtimeName: 'fake',
      runtimeVersion: '0.1.0',
      runtimeApiVersion: 'v1',
    }));
  }

  status(opts?: CallOptions & { verbose?: boolean }): Promise<RuntimeStatus> {
    return this.call('status', [], opts, () => ({
      conditions: cloneJson(this.conditions),
      ...(opts?.verbose ? { info: { ...this.info } } : {}),
    }));
  }

  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string, opts?: CallOptions): Promise<string> {
    return this.call('runPodSandbox', [config, runtimeHandler], opts, () => {
      if (runtimeHandler && !this.runtimeHandlers.has(runtimeHandler)) {
        throw criError(
          'CRI RunPodSandbox',
          'UNKNOWN',
          `failed to get sandbox runtime: no runtime for "${runtimeHandler}" is configured`,
        );
      }
      const m = config.metadata;
      const id = `${m.name}_${m.namespace}_${m.uid}_${m.attempt}`;
      if (this.sandboxes.has(id)) {
        throw criError('CRI RunPodSandbox', 'ALREADY_EXISTS', `sandbox name "${id}" is reserved`);
      }
      const options = config.linux?.securityContext?.namespaceOptions ?? {};
      const ip = options.network === 'NODE' ? '' : `10.88.0.${this.nextIP++}`;
      this.sandboxes.set(id, {
        logDirectory: config.logDirectory ?? '',
        status: {
          id,
          metadata: { ...m },
          state: 'SANDBOX_READY',
          createdAt: this.clock.now() * 1e6,
          network: { ip, additionalIps: [] },
          linux: { namespaces: { options: { ...options } } },
          labels: { ...config.labels },
          annotations: { ...config.annotations },
          runtimeHandler: runtimeHandler ?? '',
        },
      });
      return id;
    });
  }

  stopPodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    return this.call('stopPodSandbox', [podSandboxId], opts, () =>
      this.stopSandbox(this.sandbox('CRI StopPodSandbox', podSandboxId)),
    );
  }

  removePodSandbox(podSandboxId: string, opts?: CallOptions): Promise<void> {
    return this.call('removePodSandbox', [podSandboxId], opts, () => {
      const sb = this.sandboxes.get(podSandboxId);
      if (sb) this.stopSandbox(sb);
      for (const [id, c] of this.containers) if (c.podSandboxId === podSandboxId) this.containers.delete(id);
      this.sandboxes.delete(podSandboxId);
    });
  }

  podSandboxStatus(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStatus> {
    return this.call('podSandboxStatus', [podSandboxId], opts, () =>
      cloneJson(this.sandbox('CRI PodSandboxStatus', podSandboxId).status),
    );
  }

  listPodSandbox(filter?: PodSandboxFilter, opts?: CallOptions): Promise<PodSandbox[]> {
    return this.call('listPodSandbox', [filter], opts, () =>
      [...this.sandboxes.values()]
        .map((sb) => sb.status)
        .filter(
          (s) =>
            (!filter?.id || s.id === filter.id) &&
            (!filter?.state || s.state === filter.state.state) &&
            matchesLabels(filter?.labelSelector, s.labels),
        )
        .map((s) =>
          cloneJson({
            id: s.id,
            metadata: s.metadata,
            state: s.state,
            createdAt: s.createdAt,
            labels: s.labels,
            annotations: s.annotations,
            ...(s.runtimeHandler !== undefined ? { runtimeHandler: s.runtimeHandler } : {}),
          }),
        ),
    );
  }

  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    opts?: CallOptions,
  ): Promise<string> {
    return this.call('createContainer', [podSandboxId, config, sandboxConfig], opts, () => {
      const sb = this.sandbox('CRI CreateContainer', podSandboxId);
      const id = `${podSandboxId}_${config.metadata.name}_${config.metadata.attempt}`;
      if (this.containers.has(id)) {
        throw criError('CRI CreateContainer', 'ALREADY_EXISTS', `container name "${id}" is reserved`);
      }
      const logPath = sb.logDirectory && config.logPath ? join(sb.logDirectory, config.logPath) : '';
      this.containers.set(id, {
        podSandboxId,
        config: cloneJson(config),
        status: {
          id,
          metadata: { ...config.metadata },
          state: 'CONTAINER_CREATED',
          createdAt: this.clock.now() * 1e6,
          startedAt: 0,
          finishedAt: 0,
          exitCode: 0,
          image: { ...config.image },
          imageRef: config.image.image,
          reason: '',
          message: '',
          labels: { ...config.labels },
          annotations: { ...config.annotations },
          mounts: cloneJson(config.mounts ?? []),
          logPath,
        },
      });
      return id;
    });
  }

  startContainer(containerId: string, opts?: CallOptions): Promise<void> {
    return this.call('startContainer', [containerId], opts, () => {
      const c = this.container('CRI StartContainer', containerId);
      if (c.status.state !== 'CONTAINER_CREATED') {
        throw criError(
          'CRI StartContainer',
          'UNKNOWN',
          `container ${containerId} is in ${c.status.state} state`,
        );
      }
      if (this.sandboxes.get(c.podSandboxId)?.status.state !== 'SANDBOX_READY') {
        throw criError('CRI StartContainer', 'UNKNOWN', `sandbox container ${c.podSandboxId} is not running`);
      }
      const failure = this.startErrors.get(containerId) ?? this.startErrors.get(c.status.metadata.name);
      if (failure !== undefined) {
        this.exit(c, 128, 'StartError');
        c.status.message = failure;
        throw criError('CRI StartContainer', 'UNKNOWN', `failed to start containerd task: ${failure}`);
      }
      c.status.state = 'CONTAINER_RUNNING';
      c.status.startedAt = this.clock.now() * 1e6;
    });
  }

  stopContainer(containerId: string, timeoutSeconds: number, opts?: CallOptions): Promise<void> {
    return this.call('stopContainer', [containerId, timeoutSeconds], opts, async (signal) => {
      const c = this.container('CRI StopContainer', containerId);
      if (!this.live(c)) return;
      const stubborn = this.ignoreSigterm.has(containerId) || this.ignoreSigterm.has(c.status.metadata.name);
      if (timeoutSeconds > 0 && !stubborn) {
        this.exit(c, this.sigtermExitCode);
        return;
      }
      if (timeoutSeconds > 0) await this.clock.sleep(timeoutSeconds * 1000, signal);
      if (this.live(c)) this.exit(c, 137);
    });
  }

  removeContainer(containerId: string, opts?: CallOptions): Promise<void> {
    return this.call('removeContainer', [containerId], opts, () => {
      const c = this.containers.get(containerId);
      if (c && this.live(c)) this.exit(c, 137);
      this.containers.delete(containerId);
    });
  }

  listContainers(filter?: ContainerFilter, opts?: CallOptions): Promise<Container[]> {
    return this.call('listContainers', [filter], opts, () =>
      this.select(filter)
        .filter((c) => !filter?.state || c.status.state === filter.state.state)
        .map(({ status: s, podSandboxId }) =>
          cloneJson({
            id: s.id,
            podSandboxId,
            metadata: s.metadata,
            image: s.image,
            imageRef: s.imageRef,
            state: s.state,
            createdAt: s.createdAt,
            labels: s.labels,
            annotations: s.annotations,
          }),
        ),
    );
  }

  containerStatus(containerId: string, opts?: CallOptions): Promise<ContainerStatus> {
    return this.call('containerStatus', [containerId], opts, () =>
      cloneJson(this.container('CRI ContainerStatus', containerId).status),
    );
  }

  execSync(
    containerId: string,
    cmd: string[],
    timeoutSeconds: number,
    opts?: CallOptions,
  ): Promise<ExecSyncResult> {
    return this.call('execSync', [containerId, cmd, timeoutSeconds], opts, () => {
      this.running('CRI ExecSync', containerId);
      return this.execResult(containerId, cmd);
    });
  }

  exec(containerId: string, cmd: string[], flags: StreamFlags, opts?: CallOptions): Promise<string> {
    return this.call('exec', [containerId, cmd, flags], opts, () => this.session('exec', containerId, flags));
  }

  attach(containerId: string, flags: StreamFlags, opts?: CallOptions): Promise<string> {
    return this.call('attach', [containerId, flags], opts, () => this.session('attach', containerId, flags));
  }

  portForward(podSandboxId: string, ports: number[], opts?: CallOptions): Promise<string> {
    return this.call('portForward', [podSandboxId, ports], opts, () => {
      const sb = this.sandbox('CRI PortForward', podSandboxId);
      if (sb.status.state !== 'SANDBOX_READY') {
        throw criError('CRI PortForward', 'UNKNOWN', `sandbox ${podSandboxId} is not running`);
      }
      return `http://127.0.0.1:10010/portforward/${this.nextSession++}`;
    });
  }

  reopenContainerLog(containerId: string, opts?: CallOptions): Promise<void> {
    return this.call('reopenContainerLog', [containerId], opts, () => {
      this.running('CRI ReopenContainerLog', containerId);
    });
  }

  containerStats(containerId: string, opts?: CallOptions): Promise<ContainerStats> {
    return this.call('containerStats', [containerId], opts, () =>
      this.statsOf(this.container('CRI ContainerStats', containerId)),
    );
  }

  listContainerStats(filter?: ContainerStatsFilter, opts?: CallOptions): Promise<ContainerStats[]> {
    return this.call('listContainerStats', [filter], opts, () =>
      this.select(filter).map((c) => this.statsOf(c)),
    );
  }

  podSandboxStats(podSandboxId: string, opts?: CallOptions): Promise<PodSandboxStats> {
    return this.call('podSandboxStats', [podSandboxId], opts, () =>
      this.sandboxStats(this.sandbox('CRI PodSandboxStats', podSandboxId)),
    );
  }

  listPodSandboxStats(filter?: PodSandboxStatsFilter, opts?: CallOptions): Promise<PodSandboxStats[]> {
    return this.call('listPodSandboxStats', [filter], opts, () =>
      [...this.sandboxes.values()]
        .filter((sb) => sb.status.state === 'SANDBOX_READY' && (!filter?.id || sb.status.id === filter.id))
        .filter((sb) => matchesLabels(filter?.labelSelector, sb.status.labels))
        .map((sb) => this.sandboxStats(sb)),
    );
  }

  private sandbox(op: string, id: string): FakeSandbox {
    const sb = this.sandboxes.get(id);
    if (!sb) throw criError(op, 'NOT_FOUND', `an error occurred when try to find sandbox "${id}": not found`);
    return sb;
  }

  private container(op: string, id: string): FakeContainer {
    const c = this.containers.get(id);
    if (!c)
      throw criError(op, 'NOT_FOUND', `an error occurred when try to find container "${id}": not found`);
    return c;
  }

  private running(op: string, id: string): FakeContainer {
    const c = this.container(op, id);
    if (c.status.state !== 'CONTAINER_RUNNING') {
      throw criError(op, 'UNKNOWN', `container ${id} is in ${c.status.state} state`);
    }
    return c;
  }

  private live(c: FakeContainer): boolean {
    const s: ContainerState = c.status.state;
    return s === 'CONTAINER_RUNNING' || s === 'CONTAINER_UNKNOWN';
  }

  private exit(c: FakeContainer, code: number, reason?: string): void {
    c.status.state = 'CONTAINER_EXITED';
    c.status.exitCode = code;
    c.status.finishedAt = this.clock.now() * 1e6;
    c.status.reason = reason ?? (code === 0 ? 'Completed' : 'Error');
  }

  /** containerd StopPodSandbox: every live container SIGKILLed, then the sandbox not ready. */
  private stopSandbox(sb: FakeSandbox): void {
    for (const c of this.containers.values()) {
      if (c.podSandboxId === sb.status.id && this.live(c)) this.exit(c, 137);
    }
    sb.status.state = 'SANDBOX_NOTREADY';
  }

  private select(filter: ContainerStatsFilter | undefined): FakeContainer[] {
    return [...this.containers.values()].filter(
      (c) =>
        (!filter?.id || c.status.id === filter.id) &&
        (!filter?.podSandboxId || c.podSandboxId === filter.podSandboxId) &&
        matchesLabels(filter?.labelSelector, c.status.labels),
    );
  }

  private session(kind: string, containerId: string, flags: StreamFlags): string {
    const op = `CRI ${kind === 'exec' ? 'Exec' : 'Attach'}`;
    if (!flags.stdin && !flags.stdout && !flags.stderr) {
      throw criError(op, 'INVALID_ARGUMENT', 'one of stdin, stdout, or stderr must be set');
    }
    this.running(op, containerId);
    return `http://127.0.0.1:10010/${kind}/${this.nextSession++}`;
  }

  /** Stats with zero usage: the fake runs no processes. */
  private statsOf(c: FakeContainer): ContainerStats {
    const timestamp = this.clock.now() * 1e6;
    const s = c.status;
    return cloneJson({
      attributes: { id: s.id, metadata: s.metadata, labels: s.labels, annotations: s.annotations },
      cpu: { timestamp, usageCoreNanoSeconds: { value: 0 } },
      memory: { timestamp, workingSetBytes: { value: 0 } },
      writableLayer: { timestamp, fsId: { mountpoint: '/var/lib/containerd' }, usedBytes: { value: 0 } },
    });
  }

  private sandboxStats(sb: FakeSandbox): PodSandboxStats {
    const timestamp = this.clock.now() * 1e6;
    const s = sb.status;
    return cloneJson({
      attributes: { id: s.id, metadata: s.metadata, labels: s.labels, annotations: s.annotations },
      linux: {
        cpu: { timestamp, usageCoreNanoSeconds: { value: 0 } },
        memory: { timestamp, workingSetBytes: { value: 0 } },
        containers: this.select({ podSandboxId: s.id }).map((c) => this.statsOf(c)),
      },
    });
  }
}
