/**
 * A tskubelet process as a node of the cluster bed, for the reliability scenarios, and what the
 * control plane says about it (through kubectl, as a user sees it).
 */
import { copyFile, mkdir } from 'node:fs/promises';
import { startCluster, type ClusterBed } from '../../harness/cluster/index.ts';
import { kubectlFor, nodeReadyStatus, type Kubectl } from '../../kit/kubectl.ts';
import { startNodeKubelet, type TskubeletProcess } from '../../kit/process.ts';
import { IMAGE, setupEnv, type Env } from '../../kit/bed.ts';
import { waitFor } from './wait.ts';

export interface ClusterNode {
  env: Env;
  cluster: ClusterBed;
  kubectl: Kubectl;
  node: string;
  proc(): TskubeletProcess;
  /** Starts (again) the kubelet process. */
  start(): Promise<void>;
  /** Status of the node's Ready condition in the API ('True' | 'False' | 'Unknown' | undefined). */
  ready(): Promise<string | undefined>;
  /** name → {phase, ready, restarts} of the pods bound to the node in `namespace`. */
  pods(): Promise<Map<string, PodSummary>>;
  /** Stops the kubelet, deletes the node's pods and the Node, closes the env. */
  close(): Promise<void>;
}

export interface PodSummary {
  phase: string;
  ready: boolean;
  restarts: number;
}

export const NS = 'default';

/** A pod bound to `node` running `sleep`, with a 1 s grace period. */
export function boundPod(node: string, name: string): string {
  return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${NS}, labels: {app: reliability}}
spec:
  nodeName: ${node}
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sleep", "3600"]
`;
}

export async function clusterNode(opts: {
  node: string;
  port: number;
  signal: AbortSignal;
  extraArgs?: string[];
  /** The kubelet's root dir, made by the caller (default: the env's). */
  rootDir?: (env: Env) => Promise<string>;
}): Promise<ClusterNode> {
  const env = await setupEnv();
  const cluster = await startCluster();
  const kubectl = kubectlFor(() => cluster.adminKubeconfig);
  await kubectl.run(['delete', 'pods', '-n', NS, '-l', 'app=reliability', '--grace-period=0', '--force']);
  await kubectl.run(['delete', 'node', opts.node, '--ignore-not-found']);
  await mkdir(env.manifests, { recursive: true });
  const rootDir = opts.rootDir ? await opts.rootDir(env) : env.rootDir;
  let proc: TskubeletProcess | undefined;
  const self: ClusterNode = {
    env,
    cluster,
    kubectl,
    node: opts.node,
    proc() {
      if (!proc) throw new Error('node kubelet not started');
      return proc;
    },
    async start() {
      proc = startNodeKubelet(
        { ...env, rootDir },
        {
          node: opts.node,
          kubeconfig: await cluster.kubeletKubeconfig(opts.node),
          // The API server's client certificate is checked against the cluster CA (kubectl exec/logs).
          extraArgs: [
            '--client-ca-file',
            cluster.caFile,
            '--port',
            String(opts.port),
            ...(opts.extraArgs ?? []),
          ],
        },
      );
      await waitFor(`node ${opts.node} Ready`, 60_000, opts.signal, async () => {
        await proc?.assertRunning();
        return (await self.ready()) === 'True' || undefined;
      });
    },
    ready: () => nodeReadyStatus(kubectl, opts.node),
    async pods() {
      const r = await kubectl.run([
        'get',
        'pods',
        '-n',
        NS,
        '--field-selector',
        `spec.nodeName=${opts.node}`,
        '-o',
        'json',
      ]);
      const out = new Map<string, PodSummary>();
      if (r.code !== 0) return out;
      const list = JSON.parse(r.stdout) as {
        items: {
          metadata: { name: string };
          status?: {
            phase?: string;
            conditions?: { type: string; status: string }[];
            containerStatuses?: { restartCount: number }[];
          };
        }[];
      };
      for (const p of list.items) {
        out.set(p.metadata.name, {
          phase: p.status?.phase ?? '',
          ready: p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
          restarts: (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0),
        });
      }
      return out;
    },
    async close() {
      await kubectl.run(['delete', 'pods', '-n', NS, '-l', 'app=reliability', '--grace-period=0', '--force']);
      await proc?.stop();
      // Kept for a look after a failure (the env's directory goes with it).
      if (proc) await copyFile(proc.logFile, `/tmp/tskubelet-rel-${opts.node}.log`).catch(() => undefined);
      await kubectl.run(['delete', 'node', opts.node, '--ignore-not-found']);
      await env.close();
    },
  };
  return self;
}
