/**
 * kubectl as the cluster tests drive it: the installed kubectl (1.32) against the bed's API server
 * with its admin kubeconfig, output collected, a deadline on every call; and the wait for a Node's
 * Ready condition every cluster suite makes.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { untilAlive, type AliveUntilOptions } from './poll.ts';

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Kubectl {
  /** Runs kubectl with `args` (and `input` on stdin); never rejects on a non-zero exit. */
  run(args: string[], opts?: { input?: string; timeoutMs?: number }): Promise<KubectlResult>;
  /** Runs kubectl and asserts it exited 0; its stdout. */
  ok(args: string[], input?: string): Promise<string>;
}

/** `kubeconfig` is read at each call (the bed may start after the helper is made). */
export function kubectlFor(kubeconfig: () => string, baseArgs: readonly string[] = []): Kubectl {
  async function run(
    args: string[],
    opts: { input?: string; timeoutMs?: number } = {},
  ): Promise<KubectlResult> {
    const child = execFile('kubectl', [...baseArgs, ...args], {
      env: { ...process.env, KUBECONFIG: kubeconfig() },
      timeout: opts.timeoutMs ?? 60_000,
      maxBuffer: 16 << 20,
    });
    child.stdin?.end(opts.input ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
    return { code, stdout, stderr };
  }
  return {
    run,
    async ok(args, input) {
      const r = await run(args, input === undefined ? {} : { input });
      assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed: ${r.stderr}`);
      return r.stdout;
    },
  };
}

const READY_STATUS = 'jsonpath={.status.conditions[?(@.type=="Ready")].status}';

/**
 * Node `node`'s Ready condition status ('True', 'False', 'Unknown'); undefined while the Node or its
 * Ready condition does not exist (not registered yet, or kubectl could not tell).
 */
export async function nodeReadyStatus(kubectl: Kubectl, node: string): Promise<string | undefined> {
  const r = await kubectl.run(['get', 'node', node, '-o', READY_STATUS]);
  return r.code === 0 && r.stdout !== '' ? r.stdout : undefined;
}

/** Polls ({@link untilAlive}: every 100 ms unless told) until Node `node` is Ready=True. */
export async function untilNodeReady(
  kubectl: Kubectl,
  node: string,
  opts: AliveUntilOptions = {},
): Promise<void> {
  await untilAlive(`node ${node} Ready`, async () => (await nodeReadyStatus(kubectl, node)) === 'True', opts);
}

export interface PodPhaseOptions extends AliveUntilOptions {
  /** Namespace of the pod (kubectl's default when absent). */
  namespace?: string;
}

/**
 * Polls until pod `name` reports `phase` (kubectl get, every 100 ms, 90 s unless told). A pod that
 * reaches Failed while another phase is awaited fails the wait at once; `alive` (a kubelet's
 * `assertRunning`) fails it as soon as the kubelet exits.
 */
export async function untilPodPhase(
  kubectl: Kubectl,
  name: string,
  phase: string,
  opts: PodPhaseOptions = {},
): Promise<void> {
  const { namespace, ...untilOpts } = opts;
  const ns = namespace === undefined ? [] : ['-n', namespace];
  await untilAlive(
    `pod ${name} ${phase}`,
    async () => {
      const r = await kubectl.run(['get', 'pod', name, ...ns, '-o', 'jsonpath={.status.phase}']);
      if (phase !== 'Failed' && r.stdout === 'Failed')
        assert.fail(`pod ${name} Failed while ${phase} was awaited`);
      return r.stdout === phase;
    },
    { timeoutMs: 90_000, ...untilOpts },
  );
}
