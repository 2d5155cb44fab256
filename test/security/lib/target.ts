/**
 * A live kubelet under attack, as the probes see it: its listeners, the pod they aim at, the
 * identities they may use, its files. Set up by standalone.ts and cluster.ts. No upstream
 * counterpart.
 */
import type { CriClient } from '../../../src/runtime/cri/index.ts';
import type { Identity, Listener, TargetName } from '../probes.ts';
import type { ClientCert, HttpResult, RaceResult } from './prober.ts';
import { runHttp } from './prober.ts';

/** A credential as the `nobody` user holds it (files it can read). */
export interface Credential {
  cert?: ClientCert;
  token?: string;
}

/** The pod the probes aim at, as the kubelet API names it. */
export interface PodRef {
  namespace: string;
  name: string;
  container: string;
}

export interface LiveTarget {
  name: TargetName | 'upstream';
  kubelet: 'tskubelet' | 'upstream';
  nodeName: string;
  rootDir: string;
  podLogsDir: string;
  pod: PodRef;
  /** The bound ports; a listener that is off is absent. */
  ports: Partial<Record<Listener, number>>;
  /** The local API socket (tskubelet). */
  socketPath?: string;
  /** Credentials as handed to `nobody`. */
  identities: Partial<Record<Identity, Credential>>;
  /** The allowed identity's original files, for the suite's own requests (as root). */
  admin: Credential;
  /** Another allowed user's original files (standalone: the console's per-user stream slots). */
  secondUser?: Credential;
  logFile: string;
  cri: CriClient;
  /** Directory of static pod manifests (the static-pod probes write there). */
  manifests?: string;
  /** The nobody race against the local socket during the start (standalone-hostile). */
  race?: RaceResult;
  /** Where probes may write scratch files (readable by nobody). */
  scratch: string;
  /** The client CA file the kubelet was given (standalone: rewritten by the reload probe). */
  clientCAFile?: string;
  /** The cluster's admin kubeconfig (cluster targets: kubectl proxy, kubectl exec). */
  adminKubeconfig?: string;
  /** The events the kubelet recorded lately, `type reason namespace/name: message` each. */
  events(): Promise<string[]>;
  /** Runs a command in the probed container as its owner would (CRI exec); its stdout. */
  execInPod(cmd: readonly string[]): Promise<string>;
  stop(): Promise<void>;
}

/** `https://127.0.0.1:P` or `http://127.0.0.1:P` for a listener of the target. */
export function listenerBase(t: LiveTarget, l: Listener): string | undefined {
  const port = t.ports[l];
  if (port === undefined) return undefined;
  return `${l === 'api' ? 'https' : 'http'}://127.0.0.1:${port}`;
}

/** A request to the kubelet API as the allowed identity, made by the suite itself (root). */
export function adminRequest(
  t: LiveTarget,
  path: string,
  opts: { method?: string; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  const base = listenerBase(t, 'api');
  if (!base) throw new Error(`${t.name}: the kubelet API is off`);
  return runHttp({
    op: 'http',
    url: `${base}${path}`,
    method: opts.method ?? 'GET',
    headers: {
      ...(t.admin.token ? { authorization: `Bearer ${t.admin.token}` } : {}),
      ...(opts.headers ?? {}),
    },
    ...(t.admin.cert ? { cert: t.admin.cert } : {}),
    maxBody: 16 << 20,
    bodyWaitMs: 10_000,
  });
}

/** The route sample's path with the target's pod filled in. */
export function fillPath(t: LiveTarget, path: string): string {
  return path
    .replaceAll('{ns}', encodeURIComponent(t.pod.namespace))
    .replaceAll('{pod}', encodeURIComponent(t.pod.name))
    .replaceAll('{c}', encodeURIComponent(t.pod.container));
}
