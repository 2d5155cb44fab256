/**
 * The node CLI against a real kubelet on the test bed's containerd: `bin/tskubelet run` standalone
 * with one static pod, then `bin/tskubelet get pods | logs | exec | describe | timeline | why` and
 * crictl's `ps | images | inspect | stats` as separate processes over the kubelet's local unix
 * socket (no certificates), as a user on the node runs them.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { IMAGE, podManifest, setupEnv, type Env } from '../kit/bed.ts';
import { freePort } from '../kit/net.ts';
import { eventually } from '../kit/poll.ts';
import { TSKUBELET_BIN, spawnTskubelet, type TskubeletProcess } from '../kit/process.ts';

const NODE_NAME = 'itest-cli';
const POD = `cli-${NODE_NAME}`;

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `bin/tskubelet ARGS` to the end (at most 60 s). */
function cli(args: readonly string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(TSKUBELET_BIN, [...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

let env: Env | undefined;
let proc: TskubeletProcess | undefined;
let socket = '';
let configFile = '';

function bed(): Env {
  if (!env) throw new Error('test bed not set up (before() failed?)');
  return env;
}

before(async () => {
  env = await setupEnv();
  const manifests = join(env.dir, 'manifests');
  await mkdir(manifests, { recursive: true });
  const rootDir = join(env.dir, 'root');
  socket = join(rootDir, 'tskubelet.sock');
  configFile = join(env.dir, 'kubelet.yaml');
  await writeFile(
    configFile,
    stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      staticPodPath: manifests,
      containerRuntimeEndpoint: env.bed.endpoint,
      podLogsDir: join(env.dir, 'logs'),
      fileCheckFrequency: '1s',
    }),
  );
  await writeFile(
    join(manifests, 'cli.yaml'),
    stringify(
      podManifest('cli', {
        containers: [
          { name: 'main', image: IMAGE, command: ['sh', '-c', 'echo hello-from-cli; exec sleep 3600'] },
        ],
      }),
    ),
  );
  proc = spawnTskubelet(
    [
      'run',
      '--config',
      configFile,
      '--root-dir',
      rootDir,
      '--hostname-override',
      NODE_NAME,
      '--node-ip',
      '127.0.0.1',
      '--healthz-port',
      '0',
      '--port',
      String(await freePort()),
    ],
    { logFile: join(env.dir, 'tskubelet.log') },
  );
  await eventually(
    'the static pod Running and Ready, seen through the CLI',
    async () => {
      await proc?.assertRunning();
      const r = await cli(['get', 'pods', '--socket', socket]);
      return r.code === 0 && new RegExp(`\\n${POD} +1/1 +Running `).test(r.stdout) ? r : undefined;
    },
    90_000,
  );
});

after(async () => {
  await proc?.stop();
  await env?.close();
});

void describe('tskubelet node CLI over the local socket (real kubelet, real containerd)', () => {
  void it('serves the socket root-only (mode 0600)', async () => {
    const st = await stat(socket);
    assert.ok(st.isSocket());
    assert.equal(st.mode & 0o777, 0o600);
  });

  void it('get pods prints kubectl columns; -o wide shows the pod IP and node; -o json is a List', async () => {
    const r = await cli(['get', 'pods', '--socket', socket]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^NAME +READY +STATUS +RESTARTS +AGE\n/);
    const wide = await cli(['get', 'pods', '-o', 'wide', '--socket', socket]);
    assert.match(wide.stdout, /IP +NODE +NOMINATED NODE +READINESS GATES\n/);
    assert.match(
      wide.stdout,
      new RegExp(
        `\\n${POD} +1/1 +Running +0 +\\S+ +\\d+\\.\\d+\\.\\d+\\.\\d+ +${NODE_NAME} +<none> +<none>\\n`,
      ),
    );
    const json = JSON.parse((await cli(['get', 'pods', '-o', 'json', '--socket', socket])).stdout) as {
      kind: string;
      items: { metadata: { name: string } }[];
    };
    assert.equal(json.kind, 'List');
    assert.deepEqual(
      json.items.map((p) => p.metadata.name),
      [POD],
    );
  });

  void it("logs prints the container's output", async () => {
    const r = await eventually('the log line', async () => {
      const l = await cli(['logs', POD, '--socket', socket]);
      return l.stdout.includes('hello-from-cli') ? l : undefined;
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'hello-from-cli\n');
  });

  void it('exec runs a command in the container and returns its exit code', async () => {
    const hi = await cli(['exec', POD, '--socket', socket, '--', 'echo', 'hi']);
    assert.deepEqual([hi.code, hi.stdout, hi.stderr], [0, 'hi\n', '']);
    const three = await cli(['exec', POD, '--socket', socket, '--', 'sh', '-c', 'exit 3']);
    assert.equal(three.code, 3, three.stderr);
    const missing = await cli(['exec', POD, '--socket', socket, '--', '/no/such/binary']);
    assert.notEqual(missing.code, 0, 'a command that cannot start fails the exec');
  });

  void it('describe pod shows the container running', async () => {
    const r = await cli(['describe', 'pod', POD, '--socket', socket]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^Name: +${POD}\\n`));
    assert.match(r.stdout, /\n {4}State: +Running\n/);
  });

  void it("timeline prints the pod's startup steps in order; -o json is the PodTimeline", async () => {
    const r = await cli(['timeline', POD, '--socket', socket]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Attempt 1:\n/);
    const order = ['seen', 'sandbox-created', 'container-created', 'container-started', 'ready'].map((step) =>
      r.stdout.search(new RegExp(`\\n${step} `)),
    );
    assert.ok(
      order.every((at, i) => at > 0 && (i === 0 || at > (order[i - 1] ?? 0))),
      `steps in order: ${order.join(',')}\n${r.stdout}`,
    );
    const doc = JSON.parse((await cli(['timeline', POD, '-o', 'json', '--socket', socket])).stdout) as {
      kind: string;
      attempts: { steps: { step: string; offsetMs: number }[] }[];
    };
    assert.equal(doc.kind, 'PodTimeline');
    const offsets = doc.attempts[0]?.steps.map((st) => st.offsetMs) ?? [];
    assert.deepEqual(
      offsets,
      [...offsets].sort((a, b) => a - b),
      'offsets never go back',
    );
  });

  void it('why says nothing holds a running, ready pod, and names a pod the node does not have', async () => {
    const r = await cli(['why', POD, '--socket', socket]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Running and Ready: nothing is holding it\./);
    const missing = await cli(['why', 'no-such-pod', '--socket', socket]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /pods "no-such-pod" not found/);
  });

  void it('ps, images, inspect and stats print what crictl prints, from the kubelet over the socket', async () => {
    const ps = await cli(['ps', '--socket', socket]);
    assert.equal(ps.code, 0, ps.stderr);
    assert.match(ps.stdout, /^CONTAINER +IMAGE +CREATED +STATE +NAME +ATTEMPT +POD ID +POD +NAMESPACE\n/);
    const row = new RegExp(
      `\\n([0-9a-f]{13}) +\\S+ +.+ ago +Running +main +0 +[0-9a-f]{13} +${POD} +default\\n`,
    );
    const id = row.exec(ps.stdout)?.[1];
    assert.ok(id, ps.stdout);
    const quiet = await cli(['ps', '-a', '-q', '--socket', socket]);
    const full = quiet.stdout.split('\n').find((l) => l.startsWith(id));
    assert.match(full ?? '', /^[0-9a-f]{64}$/);

    const images = await cli(['images', '--socket', socket]);
    assert.equal(images.code, 0, images.stderr);
    assert.match(images.stdout, /^IMAGE +TAG +IMAGE ID +SIZE\n/);
    const [repo, tag] = IMAGE.includes(':')
      ? [IMAGE.slice(0, IMAGE.lastIndexOf(':')), IMAGE.slice(IMAGE.lastIndexOf(':') + 1)]
      : [IMAGE, 'latest'];
    assert.ok(
      images.stdout
        .split('\n')
        .some((l) => l.includes(repo.split('/').pop() ?? repo) && l.includes(tag ?? '')),
      images.stdout,
    );

    const inspect = await cli(['inspect', id, '--socket', socket]);
    assert.equal(inspect.code, 0, inspect.stderr);
    const doc = JSON.parse(inspect.stdout) as {
      status: { id: string; state: string; createdAt: string };
      info?: { pid?: number };
    };
    assert.equal(doc.status.id, full);
    assert.equal(doc.status.state, 'CONTAINER_RUNNING');
    assert.match(doc.status.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    assert.ok((doc.info?.pid ?? 0) > 0, "containerd's verbose info carries the pid");
    const missing = await cli(['inspect', 'ffffffffffff', '--socket', socket]);
    assert.equal(missing.code, 1);

    const stats = await cli(['stats', '--socket', socket]);
    assert.equal(stats.code, 0, stats.stderr);
    assert.match(stats.stdout, /^CONTAINER +NAME +CPU % +MEM +DISK +INODES\n/);
    assert.match(stats.stdout, new RegExp(`\\n${id} +main +\\d+\\.\\d\\d +\\S+B +\\S+B +\\d+\\n`));
  });

  void it('get takes -l, --show-labels, --no-headers, -o jsonpath and -o custom-columns', async () => {
    const none = await cli(['get', 'pods', '-l', 'app=nope', '--socket', socket]);
    assert.equal(none.stderr, 'No resources found in default namespace.\n');
    const labelled = await cli(['get', 'pods', '--show-labels', '--no-headers', '--socket', socket]);
    assert.match(labelled.stdout, new RegExp(`^${POD} +1/1 +Running .* (\\S+=\\S+|<none>)\\n$`));
    const jp = await cli(['get', 'pods', '-o', 'jsonpath={.items[*].metadata.name}', '--socket', socket]);
    assert.equal(jp.stdout, POD);
    const cc = await cli([
      'get',
      'pods',
      '-o',
      'custom-columns=NAME:.metadata.name,NODE:.spec.nodeName',
      '--socket',
      socket,
    ]);
    assert.match(cc.stdout, new RegExp(`^NAME +NODE\\n${POD} +${NODE_NAME}\\n$`));
  });

  void it('logs --limit-bytes cuts the output, --since and --all-containers are accepted', async () => {
    const cut = await cli(['logs', POD, '--limit-bytes', '5', '--socket', socket]);
    assert.deepEqual([cut.code, cut.stdout], [0, 'hello']);
    const since = await cli(['logs', POD, '--since', '1h', '--all-containers', '--socket', socket]);
    assert.deepEqual([since.code, since.stdout], [0, 'hello-from-cli\n']);
  });

  void it("describe prints the kubelet's events about the pod", async () => {
    const r = await cli(['describe', 'pod', POD, '--socket', socket]);
    assert.match(r.stdout, /\nEvents:\n {2}Type +Reason +Age +From +Message\n/);
    assert.match(r.stdout, /\n {2}Normal +Started +\S+ +kubelet +Started container main\n/);
  });

  void it('a second kubelet refuses to start on the live socket, and the first keeps serving it', async () => {
    const other = join(bed().dir, 'other-root');
    const port = await freePort();
    const second = await new Promise<CliResult>((resolve) => {
      execFile(
        TSKUBELET_BIN,
        [
          'run',
          '--config',
          configFile,
          '--root-dir',
          other,
          '--local-socket',
          socket,
          '--healthz-port',
          '0',
          '--port',
          String(port),
        ],
        { timeout: 60_000 },
        (err, stdout, stderr) =>
          resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      );
    });
    assert.notEqual(second.code, 0);
    assert.match(second.stdout + second.stderr, /another process \(a running kubelet\?\) serves/);
    assert.equal((await cli(['get', 'pods', '-o', 'name', '--socket', socket])).stdout, `pod/${POD}\n`);
  });

  void it('removes the socket when the kubelet stops', async () => {
    await proc?.stop();
    await assert.rejects(stat(socket), { code: 'ENOENT' });
    const r = await cli(['get', 'pods', '--socket', socket]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^error: no kubelet socket at /);
  });
});
