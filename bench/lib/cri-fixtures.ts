/**
 * Realistic CRI messages for bench/cri-codec.ts, shaped as containerd 1.6 answers a kubelet that
 * runs `pods` pods of two containers each (tskubelet's labels and annotations, 64-hex ids,
 * nanosecond timestamps), plus the requests a pod start sends (RunPodSandbox, CreateContainer).
 */
import type {
  Container,
  ContainerConfig,
  ContainerStatus,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxStatus,
  VersionInfo,
} from '../../src/runtime/cri/types.ts';

function hex64(seed: number): string {
  let s = '';
  let x = (seed * 2654435761) >>> 0;
  while (s.length < 64) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += x.toString(16).padStart(8, '0');
  }
  return s.slice(0, 64);
}

function uid(i: number): string {
  const h = hex64(i + 7777);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

const T0 = 1_764_000_000_000_000_000;
const IMAGE = 'docker.io/library/busybox:1.29';
const IMAGE_REF = `sha256:${hex64(424242)}`;

interface PodId {
  name: string;
  namespace: string;
  uid: string;
}

function pod(i: number): PodId {
  return { name: `bench-${String(i).padStart(3, '0')}`, namespace: 'default', uid: uid(i) };
}

function sandboxLabels(p: PodId): Record<string, string> {
  return {
    app: 'bench',
    'io.kubernetes.pod.name': p.name,
    'io.kubernetes.pod.namespace': p.namespace,
    'io.kubernetes.pod.uid': p.uid,
  };
}

function sandboxAnnotations(): Record<string, string> {
  return {
    'kubernetes.io/config.seen': '2026-11-24T10:00:00.000000000Z',
    'kubernetes.io/config.source': 'file',
  };
}

function containerLabels(p: PodId, c: string): Record<string, string> {
  return {
    'io.kubernetes.container.name': c,
    'io.kubernetes.pod.name': p.name,
    'io.kubernetes.pod.namespace': p.namespace,
    'io.kubernetes.pod.uid': p.uid,
  };
}

function containerAnnotations(): Record<string, string> {
  return {
    'io.kubernetes.container.hash': '5a1c9f3e',
    'io.kubernetes.container.restartCount': '0',
    'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
    'io.kubernetes.container.terminationMessagePolicy': 'File',
    'io.kubernetes.pod.terminationGracePeriod': '30',
  };
}

export function podSandbox(i: number): PodSandbox {
  const p = pod(i);
  return {
    id: hex64(i),
    metadata: { ...p, attempt: 0 },
    state: 'SANDBOX_READY',
    createdAt: T0 + i * 1_000_003,
    labels: sandboxLabels(p),
    annotations: sandboxAnnotations(),
    runtimeHandler: '',
  };
}

export function container(i: number, c: number): Container {
  const p = pod(i);
  const name = c === 0 ? 'app' : 'sidecar';
  return {
    id: hex64(100_000 + i * 2 + c),
    podSandboxId: hex64(i),
    metadata: { name, attempt: 0 },
    image: { image: IMAGE_REF },
    imageRef: IMAGE_REF,
    state: 'CONTAINER_RUNNING',
    createdAt: T0 + i * 1_000_003 + 50_000_000,
    labels: containerLabels(p, name),
    annotations: containerAnnotations(),
  };
}

export function podSandboxStatus(i: number): PodSandboxStatus {
  const s = podSandbox(i);
  return {
    ...s,
    network: { ip: `10.88.${i >> 8}.${i & 255}`, additionalIps: [] },
    linux: { namespaces: { options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD', targetId: '' } } },
  };
}

export function containerStatus(i: number, c: number): ContainerStatus {
  const ct = container(i, c);
  const p = pod(i);
  return {
    id: ct.id,
    metadata: ct.metadata,
    state: ct.state,
    createdAt: ct.createdAt,
    startedAt: ct.createdAt + 80_000_000,
    finishedAt: 0,
    exitCode: 0,
    image: { image: IMAGE },
    imageRef: IMAGE_REF,
    reason: '',
    message: '',
    labels: ct.labels,
    annotations: ct.annotations,
    mounts: [
      {
        containerPath: '/var/run/secrets/kubernetes.io/serviceaccount',
        hostPath: `/var/lib/kubelet/pods/${p.uid}/volumes/kubernetes.io~projected/kube-api-access`,
        readonly: true,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_PRIVATE',
      },
      {
        containerPath: '/dev/termination-log',
        hostPath: `/var/lib/kubelet/pods/${p.uid}/containers/${ct.metadata.name}/0a1b2c3d`,
        readonly: false,
        selinuxRelabel: false,
        propagation: 'PROPAGATION_PRIVATE',
      },
    ],
    logPath: `/var/log/pods/${p.namespace}_${p.name}_${p.uid}/${ct.metadata.name}/0.log`,
  };
}

export const version: VersionInfo = {
  version: '0.1.0',
  runtimeName: 'containerd',
  runtimeVersion: '1.6.20~ds1',
  runtimeApiVersion: 'v1',
};

export function sandboxConfig(i: number): PodSandboxConfig {
  const p = pod(i);
  return {
    metadata: { ...p, attempt: 0 },
    hostname: p.name,
    logDirectory: `/var/log/pods/${p.namespace}_${p.name}_${p.uid}`,
    dnsConfig: {
      servers: ['10.96.0.10'],
      searches: ['default.svc.cluster.local', 'svc.cluster.local', 'cluster.local'],
      options: ['ndots:5'],
    },
    portMappings: [],
    labels: sandboxLabels(p),
    annotations: sandboxAnnotations(),
    linux: {
      cgroupParent: `/kubepods/besteffort/pod${p.uid}`,
      securityContext: {
        namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' },
        seccomp: { profileType: 'RuntimeDefault' },
      },
      sysctls: {},
    },
  };
}

export function containerConfig(i: number): ContainerConfig {
  const p = pod(i);
  return {
    metadata: { name: 'app', attempt: 0 },
    image: { image: IMAGE_REF },
    command: ['sh', '-c'],
    args: ['trap "exit 0" TERM; while true; do sleep 1; done'],
    workingDir: '',
    envs: [
      { key: 'KUBERNETES_SERVICE_HOST', value: '10.96.0.1' },
      { key: 'KUBERNETES_SERVICE_PORT', value: '443' },
      { key: 'KUBERNETES_PORT', value: 'tcp://10.96.0.1:443' },
      { key: 'POD_NAME', value: p.name },
    ],
    mounts: containerStatus(i, 0).mounts,
    labels: containerLabels(p, 'app'),
    annotations: containerAnnotations(),
    logPath: 'app/0.log',
    linux: {
      resources: { cpuPeriod: 100000, cpuQuota: 0, cpuShares: 2, memoryLimitInBytes: 0, oomScoreAdj: 1000 },
      securityContext: {
        namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' },
        runAsUser: { value: 0 },
        maskedPaths: ['/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list'],
        readonlyPaths: [
          '/proc/asound',
          '/proc/bus',
          '/proc/fs',
          '/proc/irq',
          '/proc/sys',
          '/proc/sysrq-trigger',
        ],
        seccomp: { profileType: 'RuntimeDefault' },
      },
    },
  };
}

/** Canned responses by method name (plain values; the server encodes them once). */
export function cannedResponses(pods: number): Record<string, object> {
  const ids = Array.from({ length: pods }, (_, i) => i);
  return {
    Version: version,
    ListPodSandbox: { items: ids.map(podSandbox) },
    ListContainers: { containers: ids.flatMap((i) => [container(i, 0), container(i, 1)]) },
    PodSandboxStatus: { status: podSandboxStatus(1) },
    ContainerStatus: { status: containerStatus(1, 0) },
    RunPodSandbox: { podSandboxId: hex64(1) },
    CreateContainer: { containerId: hex64(100_002) },
    StartContainer: {},
  };
}
