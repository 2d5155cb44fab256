/**
 * The kubelet API as a user meets it: kubectl 1.32 against the bed's kube-apiserver 1.20, which
 * reaches tskubelet on 127.0.0.1:11250 with its kubelet client certificate. logs (plain, --tail,
 * -f, --previous, --timestamps, --since), exec (stdout, stderr, exit code, -i, -t), attach,
 * port-forward, `get --raw .../proxy/...`; and straight at the kubelet port, who gets in and who does not.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFile, readdir, stat } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startCluster, type ClusterBed } from '../harness/cluster/index.ts';
import { pkiPaths } from '../harness/cluster/control-plane.ts';
import { IMAGE, setupEnv, type Env } from '../kit/bed.ts';
import { eventually } from '../kit/poll.ts';
import { startNodeKubelet, type TskubeletProcess } from '../kit/process.ts';
import { kubectlFor, untilNodeReady, untilPodPhase } from '../kit/kubectl.ts';

const NODE = 'tsk-kubectl';
/**
 * Off the default 10250 so another kubelet on the machine (a conformance or benchmark run) never
 * collides: the API server dials the port the Node reports in status.daemonEndpoints.
 */
const PORT = 11250;
const NS = 'default';
const run = promisify(execFile);

describe('kubectl against a tskubelet node (kubelet API)', () => {
  let env: Env;
  let cluster: ClusterBed;
  let kubelet: TskubeletProcess | undefined;

  const k = kubectlFor(() => cluster.adminKubeconfig);
  const kubectl = (args: string[], opts: { input?: string; timeoutMs?: number } = {}) => k.run(args, opts);
  const ok = (args: string[], input?: string) => k.ok(args, input);

  function podYaml(name: string, script: string, extra = ''): string {
    return `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${NS}}
spec:
  nodeName: ${NODE}
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ${IMAGE}
    command: ["sh", "-c", ${JSON.stringify(script)}]
${extra}`;
  }

  const waitRunning = (name: string) => untilPodPhase(k, name, 'Running');

  /** GET straight at the kubelet's port, optionally with a token or a client certificate. */
  function direct(path: string, auth: { token?: string; cert?: string; key?: string } = {}): Promise<number> {
    return new Promise((resolve, reject) => {
      void (async () => {
        const tls =
          auth.cert && auth.key ? { cert: await readFile(auth.cert), key: await readFile(auth.key) } : {};
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: PORT,
            path,
            rejectUnauthorized: false,
            agent: false,
            ...tls,
            headers: auth.token ? { authorization: `Bearer ${auth.token}` } : {},
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end();
      })().catch(reject);
    });
  }

  before(async () => {
    env = await setupEnv();
    cluster = await startCluster();
    await kubectl(['delete', 'node', NODE, '--ignore-not-found']);
    await kubectl([
      'delete',
      'pods',
      '--all',
      '-n',
      NS,
      '--grace-period=0',
      '--force',
      '--field-selector',
      `spec.nodeName=${NODE}`,
    ]);
    const kubeconfig = await cluster.kubeletKubeconfig(NODE);
    kubelet = startNodeKubelet(env, {
      node: NODE,
      kubeconfig,
      extraArgs: ['--client-ca-file', cluster.caFile, '--port', String(PORT)],
    });
    await untilNodeReady(k, NODE, { timeoutMs: 90_000 });
    await ok(
      ['apply', '-f', '-'],
      [
        podYaml(
          'talker',
          // containerd copies stdout and stderr separately: pauses keep the file in this order.
          'echo line-1; echo line-2; echo line-3; sleep 0.3; echo oops >&2; sleep 2; echo line-4; ' +
            'while true; do if [ -f /tmp/go ]; then echo later-line; rm /tmp/go; fi; sleep 0.2; done',
        ),
        podYaml('crasher', 'echo "run at $(date +%s)"; sleep 1; exit 3'),
        podYaml(
          'web',
          'mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 8080 -h /www',
          '    ports: [{containerPort: 8080}]',
        ),
        podYaml('ticker', 'i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.5; done'),
      ].join('\n---\n'),
    );
    for (const p of ['talker', 'web', 'ticker']) await waitRunning(p);
  });

  after(async () => {
    if (cluster)
      await kubectl([
        'delete',
        'pods',
        'talker',
        'crasher',
        'web',
        'ticker',
        '--grace-period=0',
        '--force',
        '--ignore-not-found',
      ]);
    await kubelet?.stop();
    if (cluster) await kubectl(['delete', 'node', NODE, '--ignore-not-found']);
    await env?.close();
    await cluster?.stop();
  });

  it('kubectl logs returns the output, with --tail, --timestamps and --since', async () => {
    const all = await eventually('four lines', async () => {
      const out = await ok(['logs', 'talker']);
      return out.includes('line-4') ? out : undefined;
    });
    assert.match(all, /^line-1\nline-2\nline-3\noops\nline-4\n/);
    assert.equal(await ok(['logs', 'talker', '--tail=2']), 'oops\nline-4\n');
    const stamped = (await ok(['logs', 'talker', '--timestamps', '--tail=1'])).trim();
    assert.match(stamped, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z line-4$/);
    assert.equal(await ok(['logs', 'talker', '--since=1h', '--tail=1']), 'line-4\n');
    assert.equal(await ok(['logs', 'talker', '--since-time=2999-01-01T00:00:00Z']), '');
  });

  it('kubectl logs -f sees a line written after it started, and ends when the client stops', async () => {
    const follower = spawn('kubectl', ['logs', '-f', 'talker', '--tail=1'], {
      env: { ...process.env, KUBECONFIG: cluster.adminKubeconfig },
    });
    let seen = '';
    follower.stdout.on('data', (d: Buffer) => (seen += d.toString()));
    try {
      await eventually('the tail line', () => (seen.includes('line-4') ? true : undefined));
      await ok(['exec', 'talker', '--', 'touch', '/tmp/go']);
      await eventually('the later line', () => (seen.includes('later-line') ? true : undefined), 15_000);
    } finally {
      follower.kill('SIGINT');
    }
  });

  it('kubectl logs --previous reads the last exited instance', async () => {
    await eventually(
      'a restart',
      async () => {
        const r = await kubectl([
          'get',
          'pod',
          'crasher',
          '-o',
          'jsonpath={.status.containerStatuses[0].restartCount}',
        ]);
        return Number(r.stdout) >= 1 ? true : undefined;
      },
      60_000,
    );
    assert.match(await ok(['logs', 'crasher', '--previous']), /^run at \d+\n$/);
    const none = await kubectl(['logs', 'talker', '--previous']);
    assert.notEqual(none.code, 0);
    assert.match(none.stderr, /previous terminated container "main" in pod "talker" not found/);
  });

  it('kubectl exec returns stdout, stderr and the exit code, reads stdin with -i, and allocates a tty with -t', async () => {
    const r = await kubectl(['exec', 'talker', '--', 'sh', '-c', 'echo to-out; echo to-err >&2; exit 7']);
    assert.equal(r.code, 7);
    assert.equal(r.stdout, 'to-out\n');
    assert.match(r.stderr, /to-err/);
    assert.equal(
      await ok(['exec', '-i', 'talker', '--', 'sh', '-c', 'tr a-z A-Z'], 'piped in\n'),
      'PIPED IN\n',
    );
    // -t needs a terminal on kubectl's side (kubectl drops the tty otherwise): script(1) gives it one.
    const tty = await run(
      'bash',
      [
        '-c',
        `script -qec "kubectl exec -i -t talker -- sh -c '[ -t 0 ] && echo is-a-tty'" /dev/null </dev/null`,
      ],
      { env: { ...process.env, KUBECONFIG: cluster.adminKubeconfig }, timeout: 30_000 },
    );
    assert.match(tty.stdout, /is-a-tty/, tty.stderr);
    const missing = await kubectl(['exec', 'talker', '-c', 'nope', '--', 'true']);
    assert.notEqual(missing.code, 0);
  });

  it('kubectl attach streams the output of the running process', async () => {
    const child = spawn('kubectl', ['attach', 'ticker', '-c', 'main'], {
      env: { ...process.env, KUBECONFIG: cluster.adminKubeconfig },
    });
    let seen = '';
    child.stdout.on('data', (d: Buffer) => (seen += d.toString()));
    child.stderr.on('data', (d: Buffer) => (seen += d.toString()));
    try {
      await eventually(
        'ticks through attach',
        () => (/tick-\d+\n.*tick-\d+/s.test(seen) ? true : undefined),
        20_000,
        () => seen,
      );
    } finally {
      child.kill('SIGINT');
    }
  });

  it('kubectl port-forward forwards a local port to the pod', async () => {
    const child = spawn('kubectl', ['port-forward', 'pod/web', '18089:8080'], {
      env: { ...process.env, KUBECONFIG: cluster.adminKubeconfig },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await eventually(
        'forwarding',
        () => (out.includes('Forwarding from') ? true : undefined),
        20_000,
        () => out,
      );
      const { stdout } = await run('curl', ['-sS', '--max-time', '10', 'http://127.0.0.1:18089/index.html']);
      assert.equal(stdout, 'hello-from-pod\n');
      const again = await run('curl', ['-sS', '--max-time', '10', 'http://127.0.0.1:18089/index.html']);
      assert.equal(again.stdout, 'hello-from-pod\n');
    } finally {
      child.kill('SIGINT');
    }
  });

  it('kubectl get --raw reaches /pods, /metrics, /stats/summary and /configz through the API server', async () => {
    const base = `/api/v1/nodes/${NODE}/proxy`;
    const pods = JSON.parse(await ok(['get', '--raw', `${base}/pods`])) as {
      kind: string;
      items: { metadata: { name: string } }[];
    };
    assert.equal(pods.kind, 'PodList');
    assert.ok(pods.items.some((p) => p.metadata.name === 'talker'));
    const metrics = await ok(['get', '--raw', `${base}/metrics`]);
    assert.match(metrics, /^kubelet_running_pods \d+/m);
    assert.match(metrics, /kubelet_node_name\{node="tsk-kubectl"\} 1/);
    assert.match(metrics, /^kubelet_runtime_operations_total\{operation_type="list_containers"\} \d+/m);
    assert.match(
      metrics,
      /^rest_client_requests_total\{code="200",method="GET",host="127\.0\.0\.1:16443"\} \d+/m,
    );
    assert.match(metrics, /^kubelet_pleg_relist_duration_seconds_count \d+/m);
    const summary = JSON.parse(await ok(['get', '--raw', `${base}/stats/summary`])) as {
      node: { nodeName: string };
      pods: { podRef: { name: string } }[];
    };
    assert.equal(summary.node.nodeName, NODE);
    assert.ok(summary.pods.some((p) => p.podRef.name === 'talker'));
    const configz = JSON.parse(await ok(['get', '--raw', `${base}/configz`])) as {
      kubeletconfig: { authentication: { anonymous: { enabled: boolean } }; authorization: { mode: string } };
    };
    assert.equal(configz.kubeletconfig.authentication.anonymous.enabled, false);
    assert.equal(configz.kubeletconfig.authorization.mode, 'Webhook');
  });

  it('rotates a chatty container log (50 MiB) within containerLogMaxSize/MaxFiles, and logs --tail still works', async () => {
    // 50 writes of 1 MiB of 64-byte lines, 2 s apart (the live file is checked every second, so
    // each write is seen before the next): ~1.6 MiB a write in the CRI log format.
    const chunk = 'seq -w 1 16384 | sed "s/$/ 0123456789abcdef0123456789abcdef0123456789abcdef0123/"';
    await ok(
      ['apply', '-f', '-'],
      podYaml(
        'chatty',
        `i=0; while [ $i -lt 50 ]; do ${chunk}; i=$((i+1)); sleep 2; done; echo done-writing; sleep 3600`,
      ),
    );
    await waitRunning('chatty');
    const uid = (await ok(['get', 'pod', 'chatty', '-o', 'jsonpath={.metadata.uid}'])).trim();
    const dir = join('/var/log/pods', `${NS}_chatty_${uid}`, 'main');
    let largest = 0;
    let mostFiles = 0;
    const MAX = 10 * 1024 * 1024;
    const ONE_WRITE = 2 * 1024 * 1024;
    await eventually(
      'the writer to finish',
      async () => {
        const files = await readdir(dir);
        mostFiles = Math.max(mostFiles, files.length);
        for (const f of files) {
          if (f.endsWith('.tmp')) continue;
          const size = f.endsWith('.gz')
            ? gunzipSync(await readFile(join(dir, f))).length
            : (await stat(join(dir, f)).catch(() => ({ size: 0 }))).size;
          largest = Math.max(largest, size);
        }
        const tail = await ok(['logs', 'chatty', '--tail=1']);
        return tail === 'done-writing\n' ? true : undefined;
      },
      200_000,
      () => ({ mostFiles, largest }),
    );
    assert.ok(mostFiles <= 5, `at most containerLogMaxFiles (5) files, saw ${mostFiles}`);
    assert.ok(largest <= MAX + ONE_WRITE, `no file above 10 MiB by more than one write, largest ${largest}`);
    const files = await readdir(dir);
    assert.ok(
      files.some((f) => f.endsWith('.gz')),
      `older rotations compressed: ${files.join(' ')}`,
    );
    const last = await ok(['logs', 'chatty', '--tail=2']);
    assert.match(last, /^16384 0123456789abcdef.*\ndone-writing\n$/);
    await kubectl(['delete', 'pod', 'chatty', '--grace-period=0', '--force']);
  });

  it('straight at the kubelet port: anonymous 401, a token without RBAC 403, with nodes/proxy 200, the API server 200', async () => {
    assert.equal(await direct('/pods'), 401);
    await ok(['create', 'serviceaccount', 'kapi-none']);
    await ok(['create', 'serviceaccount', 'kapi-proxy']);
    await ok(['create', 'clusterrole', 'kapi-node-proxy', '--verb=get', '--resource=nodes/proxy']);
    await ok([
      'create',
      'clusterrolebinding',
      'kapi-node-proxy',
      '--clusterrole=kapi-node-proxy',
      `--serviceaccount=${NS}:kapi-proxy`,
    ]);
    try {
      const none = (await ok(['create', 'token', 'kapi-none'])).trim();
      const proxy = (await ok(['create', 'token', 'kapi-proxy'])).trim();
      assert.equal(await direct('/pods', { token: none }), 403);
      assert.equal(await direct('/pods', { token: 'not-a-token' }), 401);
      assert.equal(
        await eventually('RBAC to apply', async () =>
          (await direct('/pods', { token: proxy })) === 200 ? 200 : undefined,
        ),
        200,
      );
      // nodes/proxy does not cover the stats subresource.
      assert.equal(await direct('/stats/summary', { token: proxy }), 403);
      const apiserver = pkiPaths().apiserverKubeletClient;
      assert.equal(await direct('/pods', apiserver), 200);
      assert.equal(await direct('/stats/summary', apiserver), 200);
    } finally {
      await kubectl(['delete', 'clusterrolebinding', 'kapi-node-proxy', '--ignore-not-found']);
      await kubectl(['delete', 'clusterrole', 'kapi-node-proxy', '--ignore-not-found']);
      await kubectl(['delete', 'serviceaccount', 'kapi-none', 'kapi-proxy', '--ignore-not-found']);
    }
  });
});
