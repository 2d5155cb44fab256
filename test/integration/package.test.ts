/**
 * The Debian packages as an operator gets them: scripts/package.sh builds tskubelet and
 * tskubelet-kubelet, dpkg installs both into a copy of a clean Debian 12 root (debootstrap minbase,
 * cached by scripts/build-package-root.sh: no Node.js, no repository there), and everything runs
 * from that root (chroot): `version`, `--help`, the man page, then examples/web.yaml as a static
 * pod from the tskubelet-kubelet package's /etc/kubernetes/manifests on the test bed's containerd,
 * timed from the start of the installed binary to the pod Running. Removal and purge keep and drop
 * the conffiles as Debian policy says. No upstream counterpart (kubernetes/release tests its
 * packages with its own tooling).
 *
 * Prints the .deb sizes and the start-up time (test diagnostics, `# ...` lines).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { setupEnv, unmountUnder, type Env } from '../kit/bed.ts';
import { freePort } from '../kit/net.ts';
import { eventually } from '../kit/poll.ts';
import { untilLocalPodPhase } from '../kit/local-api.ts';
import { spawnLogged, type LoggedProcess } from '../kit/process.ts';
import { monotonicNow } from '../../src/util/clock.ts';

const run = promisify(execFile);
const REPO = join(import.meta.dirname, '..', '..');
const NODE_NAME = 'pkg-itest';
const POD = `web-${NODE_NAME}`;
/** What a root shell on a fresh Debian has; the repository's node_modules/.bin is not on it. */
const CLEAN_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8' };

interface Built {
  main: string;
  kubelet: string;
}

let built: Built | undefined;
let root = '';
let env: Env | undefined;
let kubelet: LoggedProcess | undefined;

function debs(): Built {
  if (!built) throw new Error('packages not built (before() failed?)');
  return built;
}

/** `cmd args` to the end, its output returned; fails with the output. */
async function sh(cmd: string, args: readonly string[], timeoutMs = 120_000): Promise<string> {
  try {
    const { stdout } = await run(cmd, [...args], {
      timeout: timeoutMs,
      env: { ...process.env, ...CLEAN_ENV },
    });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`, {
      cause: err,
    });
  }
}

/** A command in the installed root, with a clean environment. */
function inRoot(args: readonly string[]): Promise<string> {
  return sh('chroot', [root, ...args]);
}

before(
  async () => {
    const out = await mkdtemp(join(tmpdir(), 'tskubelet-deb-'));
    const [main, kube] = (await sh('bash', [join(REPO, 'scripts/package.sh'), out], 600_000))
      .trim()
      .split('\n');
    if (!main?.endsWith('.deb') || !kube?.endsWith('.deb'))
      throw new Error(`package.sh printed ${main}, ${kube}`);
    built = { main, kubelet: kube };
    const pristine = (await sh('bash', [join(REPO, 'scripts/build-package-root.sh')], 1_200_000)).trim();
    root = join(await mkdtemp(join(tmpdir(), 'tskubelet-pkg-root-')), 'root');
    await sh('cp', ['-a', pristine, root]);
  },
  { timeout: 1_800_000 },
);

after(async () => {
  await kubelet?.stop(10_000);
  // The root's mounts first: one of them is a bind of env.dir, which env.close() removes.
  if (root) await unmountUnder(root);
  await env?.close();
  if (root) {
    const left = (await readFile('/proc/mounts', 'utf8'))
      .split('\n')
      .filter((l) => l.split(' ')[1]?.startsWith(`${root}/`));
    // Never remove through a mount (the bind of /dev above all).
    if (left.length > 0) throw new Error(`mounts left under ${root}; not removing it:\n${left.join('\n')}`);
    await rm(join(root, '..'), { recursive: true, force: true });
  }
  if (built) await rm(join(built.main, '..'), { recursive: true, force: true });
});

void describe('the Debian packages on a clean Debian 12 root', () => {
  void it('hold the bundle, Node.js 24 and the unit, and no TypeScript or node_modules', async (t) => {
    const files = (await sh('dpkg-deb', ['-c', debs().main]))
      .split('\n')
      .map((l) => l.split(/\s+/).slice(5).join(' '));
    for (const f of [
      './usr/bin/tskubelet',
      './usr/lib/tskubelet/node',
      './usr/lib/tskubelet/js/cli/main.js',
      './usr/lib/tskubelet/js/cli/decode-worker.js',
      './usr/lib/tskubelet/js/cli/api.proto',
      './usr/lib/tskubelet/js/cli/static/index.html',
      './lib/systemd/system/tskubelet.service',
      './etc/default/tskubelet',
      './usr/share/man/man1/tskubelet.1.gz',
      './usr/share/doc/tskubelet/copyright',
    ]) {
      assert.ok(files.includes(f), `${f} missing from ${debs().main}`);
    }
    assert.deepEqual(
      files.filter((f) => /\.ts$|\/node_modules\//.test(f)),
      [],
      'no TypeScript and no node_modules',
    );
    const kubeletFiles = await sh('dpkg-deb', ['-c', debs().kubelet]);
    assert.match(kubeletFiles, /\.\/usr\/bin\/kubelet -> tskubelet\n/);
    assert.match(kubeletFiles, /\.\/lib\/systemd\/system\/kubelet\.service\n/);
    const control = await sh('dpkg-deb', ['-f', debs().kubelet]);
    assert.match(control, /^Provides: kubelet \(= 1\.20\.2\)$/m);
    assert.match(control, /^Conflicts: kubelet$/m);
    const sizes = await Promise.all([debs().main, debs().kubelet].map(async (f) => (await stat(f)).size));
    t.diagnostic(
      `tskubelet .deb ${((sizes[0] ?? 0) / 2 ** 20).toFixed(1)} MiB, tskubelet-kubelet .deb ${((sizes[1] ?? 0) / 1024).toFixed(0)} KiB`,
    );
  });

  void it('install with apt on a root without Node.js; units installed, not enabled', async () => {
    await assert.rejects(inRoot(['sh', '-c', 'command -v node']), 'the clean root has no node of its own');
    // As an operator installs a downloaded .deb: apt resolves what the root lacks (openssl) from
    // Debian's mirror, and dpkg runs the maintainer scripts in the root.
    await copyFile('/etc/resolv.conf', join(root, 'etc/resolv.conf'));
    for (const f of [debs().main, debs().kubelet]) await copyFile(f, join(root, 'tmp', basename(f)));
    await sh(
      'chroot',
      [
        root,
        'sh',
        '-c',
        'DEBIAN_FRONTEND=noninteractive; export DEBIAN_FRONTEND; apt-get update -q && apt-get install -y -q --no-install-recommends ' +
          [debs().main, debs().kubelet].map((f) => `/tmp/${basename(f)}`).join(' '),
      ],
      300_000,
    );
    const status = await sh('dpkg-query', [
      '--admindir',
      join(root, 'var/lib/dpkg'),
      '-W',
      '-f',
      '${Package} ${Status}\n',
      'tskubelet',
      'tskubelet-kubelet',
    ]);
    assert.equal(status, 'tskubelet install ok installed\ntskubelet-kubelet install ok installed\n');
    const conffiles = await sh('dpkg-query', [
      '--admindir',
      join(root, 'var/lib/dpkg'),
      '-W',
      '-f',
      '${Conffiles}\n',
      'tskubelet',
      'tskubelet-kubelet',
    ]);
    assert.match(conffiles, /\/etc\/default\/tskubelet [0-9a-f]{32}/);
    assert.match(conffiles, /\/etc\/default\/kubelet [0-9a-f]{32}/);
    for (const unit of ['tskubelet.service', 'kubelet.service']) {
      await assert.rejects(
        stat(join(root, 'etc/systemd/system/multi-user.target.wants', unit)),
        `${unit} not enabled`,
      );
    }
  });

  void it('tskubelet version, --help and the man page run from the installed files', async () => {
    assert.match(await inRoot(['/usr/bin/tskubelet', 'version']), /^tskubelet v\d+\.\d+\.\d+/);
    assert.match(await inRoot(['/usr/lib/tskubelet/node', '--version']), /^v24\./);
    assert.equal(
      await inRoot(['/usr/bin/kubelet', 'version']),
      await inRoot(['/usr/bin/tskubelet', 'version']),
    );
    const help = await inRoot(['/usr/bin/tskubelet', 'run', '--help']);
    assert.match(help, /--pod-manifest-path <path>/);
    assert.match(help, /--container-runtime-endpoint <endpoint>/);
    // The manifest decoder's worker (src/podsource/offload.ts starts it for manifests above
    // 256 KiB and falls back to decoding inline, with a warning, when it cannot start): a second entry
    // point of the bundle, loaded by the installed node.
    const worker = `
      const { Worker } = require('node:worker_threads');
      const w = new Worker('/usr/lib/tskubelet/js/cli/decode-worker.js');
      w.on('error', (e) => { console.error(e); process.exit(1); });
      w.on('message', (m) => { console.log(JSON.stringify(m)); process.exit(0); });
      w.postMessage({ id: 7, kind: 'file', origin: '/m.yaml', nodeName: 'n',
        text: 'apiVersion: v1\\nkind: Pod\\nmetadata: {name: w}\\nspec: {containers: [{name: c, image: i}]}\\n' });
    `;
    const reply = JSON.parse(await inRoot(['/usr/lib/tskubelet/node', '-e', worker])) as {
      id: number;
      ok: boolean;
      pods?: { metadata: { name: string } }[];
    };
    assert.deepEqual([reply.id, reply.ok, reply.pods?.[0]?.metadata.name], [7, true, 'w-n']);
    const man = await sh('sh', ['-c', `gzip -dc ${join(root, 'usr/share/man/man1/tskubelet.1.gz')}`]);
    assert.match(man, /^\.TH TSKUBELET 1 /m);
    assert.match(man, /^\\fB\\-\\-pod\\-manifest\\-path\\fR/m);
  });

  void it(
    'runs examples/web.yaml as a static pod on the bed containerd, from the chroot',
    { timeout: 300_000 },
    async (t) => {
      env = await setupEnv();
      const e = env;
      // The kubelet inside sees the host's kernel interfaces, the bed's containerd socket, and its
      // root and log directories at the paths containerd (outside) sees them.
      for (const d of ['proc', 'sys', 'dev', e.dir.slice(1), 'run/tskubelet-bed'])
        await mkdir(join(root, d), { recursive: true });
      await sh('mount', ['-t', 'proc', 'proc', join(root, 'proc')]);
      for (const d of ['/sys', '/dev', '/run/tskubelet-bed', e.dir]) {
        await sh('mount', ['--rbind', d, join(root, d)]);
        await sh('mount', ['--make-rslave', join(root, d)]);
      }
      await copyFile('/etc/resolv.conf', join(root, 'etc/resolv.conf'));
      await copyFile(join(REPO, 'examples/web.yaml'), join(root, 'etc/kubernetes/manifests/web.yaml'));
      const config = join(e.dir, 'kubelet.yaml');
      await writeFile(
        config,
        stringify({
          apiVersion: 'kubelet.config.k8s.io/v1beta1',
          kind: 'KubeletConfiguration',
          staticPodPath: '/etc/kubernetes/manifests',
          containerRuntimeEndpoint: e.bed.endpoint,
          podLogsDir: e.logsDir,
          fileCheckFrequency: '1s',
        }),
      );
      const socket = join(e.rootDir, 'tskubelet.sock');
      const consolePort = await freePort();
      const started = monotonicNow();
      kubelet = spawnLogged(
        'chroot',
        [
          root,
          '/usr/bin/tskubelet',
          'run',
          '--config',
          config,
          '--root-dir',
          e.rootDir,
          '--hostname-override',
          NODE_NAME,
          '--node-ip',
          '127.0.0.1',
          '--healthz-port',
          '0',
          '--port',
          String(await freePort()),
          '--console-address',
          `127.0.0.1:${consolePort}`,
        ],
        { logFile: join(e.dir, 'tskubelet.log'), env: CLEAN_ENV },
      );
      const k = kubelet;
      const running = await untilLocalPodPhase(socket, POD, 'Running', {
        timeoutMs: 120_000,
        alive: () => k.assertRunning(),
        describe: () => readFileSync(k.logFile, 'utf8').split('\n').slice(-40),
      });
      const toRunning = monotonicNow() - started;
      const ip = running.status?.podIP;
      assert.ok(ip, 'the pod has an IP');
      const page = await eventually('the page', async () => {
        const r = await fetch(`http://${ip}:8080/`).catch(() => undefined);
        return r?.ok ? r.text() : undefined;
      });
      assert.equal(page, `hello from tskubelet, pod ${POD}\n`);
      t.diagnostic(`start of the installed tskubelet to ${POD} Running: ${toRunning} ms`);

      // The console's files, which the bundle serves from beside itself.
      const consolePage = await fetch(`http://127.0.0.1:${consolePort}/console/`);
      assert.equal(consolePage.status, 200);
      assert.match(await consolePage.text(), /<html/i);
    },
  );

  void it('remove keeps the conffiles, purge removes them', async () => {
    await kubelet?.stop(10_000);
    kubelet = undefined;
    await sh('dpkg', ['--root', root, '-r', 'tskubelet-kubelet', 'tskubelet']);
    await assert.rejects(stat(join(root, 'usr/bin/tskubelet')));
    await assert.rejects(stat(join(root, 'usr/lib/tskubelet/node')));
    assert.ok((await stat(join(root, 'etc/default/tskubelet'))).isFile(), 'conffile kept on remove');
    await sh('dpkg', ['--root', root, '-P', 'tskubelet-kubelet', 'tskubelet']);
    await assert.rejects(stat(join(root, 'etc/default/tskubelet')));
    await assert.rejects(stat(join(root, 'etc/default/kubelet')));
  });
});
