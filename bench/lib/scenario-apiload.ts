/**
 * Scenario 6 of bench/run.ts: the kubelet API under load, for one kubelet secured as kubeadm sets it
 * up. The measurement itself is bench/lib/apiload.ts.
 */
import { pkiPaths } from '../../test/harness/cluster/control-plane.ts';
import { DEFAULT_BENCH_MAX_PODS, kubeletApiPort, type KubeletKind } from '../../test/kit/kubelets.ts';
import { APILOAD_PREFIX, measureApiLoad } from './apiload.ts';
import {
  NAMESPACE,
  NODE,
  eldMark,
  kubeletDirs,
  startClusterKubelet,
  stopClusterKubelet,
  withFreshContainerd,
  type BenchEnv,
  type ClusterCtx,
} from './scenario-env.ts';

export async function apiloadRun(env: BenchEnv, ctx: ClusterCtx, kind: KubeletKind): Promise<void> {
  const d = kubeletDirs(env, 'apiload', kind);
  await withFreshContainerd(env, `api load ${kind}`, async (bed, cri) => {
    const k = await startClusterKubelet(env, ctx, kind, bed, d, {
      maxPods: DEFAULT_BENCH_MAX_PODS,
      secureApi: true,
    });
    try {
      const client = pkiPaths().apiserverKubeletClient;
      env.results.apiload.push(
        await measureApiLoad({
          kind,
          kubelet: k,
          port: kubeletApiPort(kind),
          containerdPid: bed.pid,
          cri,
          admin: ctx.admin,
          namespace: NAMESPACE,
          node: NODE[kind],
          windowMs: env.windowMs,
          execPerSec: env.execRate,
          token: env.token,
          clientCert: { cert: client.cert, key: client.key },
          eldMark: () => eldMark(k, d.eld),
          log: env.log,
        }),
      );
    } finally {
      await stopClusterKubelet(ctx, kind, k, d, APILOAD_PREFIX);
    }
  });
}
