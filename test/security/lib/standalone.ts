/**
 * The attacker suite's standalone tskubelet nodes (probes.ts `standalone`, `standalone-hostile`):
 * `bin/tskubelet run` on the bed's containerd (test/kit/process.ts), static pods,
 * the documented standalone API setup (client CA + AlwaysAllow), every listener on its own free
 * port, a KubeletConfiguration file for what has no flag (`podLogsDir`). No upstream counterpart.
 */
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startStandaloneKubelet, type TskubeletProcess } from '../../kit/process.ts';
import { IMAGE, podManifest, setupEnv, writeManifest, type Env } from '../../kit/bed.ts';
import { eventually } from '../../kit/poll.ts';
import { freePort } from '../../kit/net.ts';
import { OTHER_USER, runAs } from './as-nobody.ts';
import { SECRET_MARKERS, VICTIM_SCRIPT, clientCert, criExec, openDir, testCa } from './common.ts';
import { runHttp, type HttpResult, type RaceResult } from './prober.ts';
import { adminRequest, type LiveTarget } from './target.ts';

const NODE: Record<'standalone' | 'standalone-hostile', string> = {
  standalone: 'sec-standalone',
  'standalone-hostile': 'sec-hostile',
};

/** The CA whose client certificates the standalone node trusts, and the users it knows. */
interface StandalonePki {
  clientCAFile: string;
  admin: { cert: string; key: string };
}

/**
 * Starts `bin/tskubelet` with the process umask set to `mask` for the fork (the child inherits it);
 * the suite's own umask is restored at once.
 */
function withUmask<T>(mask: number | undefined, fn: () => T): T {
  if (mask === undefined) return fn();
  const old = process.umask(mask);
  try {
    return fn();
  } finally {
    process.umask(old);
  }
}

/** The console feed's snapshot (node, pods, recent events) through the local socket, as root. */
function consoleFeed(t: LiveTarget): Promise<HttpResult> {
  if (!t.socketPath) throw new Error(`${t.name}: no local socket`);
  return runHttp({
    op: 'http',
    url: `unix:${t.socketPath}`,
    path: '/debug/console/events',
    method: 'GET',
    maxBody: 4 << 20,
    bodyWaitMs: 1_500,
  });
}

/** The snapshot's events, one `type reason namespace/name: message` line each. */
function eventLines(feed: string): string[] {
  const data = /^event: snapshot\ndata: (.*)$/m.exec(feed)?.[1];
  if (!data) throw new Error(`no snapshot in the console feed: ${feed.slice(0, 200)}`);
  const snapshot = JSON.parse(data) as {
    events: { type: string; reason: string; message: string; object: { namespace?: string; name: string } }[];
  };
  return snapshot.events.map(
    (e) => `${e.type} ${e.reason} ${e.object.namespace ?? ''}/${e.object.name}: ${e.message}`,
  );
}

export async function startStandaloneTarget(name: 'standalone' | 'standalone-hostile'): Promise<LiveTarget> {
  const hostile = name === 'standalone-hostile';
  const node = NODE[name];
  const env: Env = await setupEnv();
  let proc: TskubeletProcess | undefined;
  try {
    // The test's directory must not be what stops nobody: every user may enter it.
    await openDir(env.dir);
    const scratch = await openDir(join(env.dir, 'scratch'));
    const pkiDir = join(env.dir, 'pki');
    const nobodyDir = await openDir(join(env.dir, 'identities'));
    const ca = await testCa(pkiDir, 'client-ca');
    const foreignCa = await testCa(pkiDir, 'foreign-ca');
    const admin = await clientCert(ca, pkiDir, nobodyDir, 'sec-admin');
    const second = await clientCert(ca, pkiDir, nobodyDir, 'sec-user-b');
    const foreign = await clientCert(
      foreignCa,
      join(pkiDir, 'foreign'),
      join(nobodyDir, 'foreign'),
      'sec-admin',
    );
    const pki: StandalonePki = { clientCAFile: join(env.dir, 'client-ca-bundle.crt'), admin: admin.own };
    await copyFile(ca.cert, pki.clientCAFile);

    await mkdir(env.manifests, { recursive: true });
    await writeManifest(
      env,
      'victim.yaml',
      podManifest('victim', {
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['sh', '-c', VICTIM_SCRIPT],
            env: [{ name: 'SECRET_ENV', value: SECRET_MARKERS.env }],
            volumeMounts: [
              { name: 'data', mountPath: '/data' },
              { name: 'mem', mountPath: '/mem' },
              { name: 'info', mountPath: '/info' },
            ],
          },
        ],
        volumes: [
          { name: 'data', emptyDir: {} },
          { name: 'mem', emptyDir: { medium: 'Memory' } },
          {
            name: 'info',
            downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] },
          },
        ],
      }),
    );

    const ports = {
      api: await freePort(),
      healthz: await freePort(),
      console: await freePort(),
      ...(hostile ? {} : { 'read-only': await freePort() }),
    };
    const podLogsDir = join(env.dir, 'pod-logs');
    const configFile = join(env.dir, 'kubelet.yaml');
    await writeFile(
      configFile,
      stringify({
        apiVersion: 'kubelet.config.k8s.io/v1beta1',
        kind: 'KubeletConfiguration',
        podLogsDir,
        authentication: {
          anonymous: { enabled: false },
          webhook: { enabled: false },
          x509: { clientCAFile: pki.clientCAFile },
        },
        authorization: { mode: 'AlwaysAllow' },
        ...(hostile ? { enableDebuggingHandlers: false } : { readOnlyPort: ports['read-only'] }),
      }),
    );
    // standalone: the root dir exists before, as 0755 (the kubelet must tighten it).
    if (!hostile) await openDir(env.rootDir);
    // standalone-hostile: the socket in a directory every user may enter, so only its own mode
    // protects it; a nobody process races the start for any socket that appears there.
    const socketDir = hostile ? await openDir(join(env.dir, 'socket')) : undefined;
    const socketPath = socketDir ? join(socketDir, 'tskubelet.sock') : join(env.rootDir, 'tskubelet.sock');
    let racing: Promise<RaceResult> | undefined;
    if (socketDir) {
      racing = runAs(OTHER_USER, [
        { op: 'race', dir: socketDir, until: socketPath, afterMs: 2_000, maxMs: 90_000 },
      ]).then((r) => r[0] as RaceResult);
      // The racer is watching before the kubelet exists.
      await new Promise((r) => setTimeout(r, 1_000));
    }
    proc = withUmask(hostile ? 0 : undefined, () =>
      startStandaloneKubelet(env, {
        node,
        port: ports.api,
        extraArgs: [
          '--config',
          configFile,
          '--healthz-port',
          String(ports.healthz),
          '--console-address',
          `127.0.0.1:${ports.console}`,
          ...(socketDir ? ['--local-socket', socketPath] : []),
          '--v=2',
        ],
      }),
    );
    const p = proc;
    const target: LiveTarget = {
      name,
      kubelet: 'tskubelet',
      nodeName: node,
      rootDir: env.rootDir,
      podLogsDir,
      pod: { namespace: 'default', name: `victim-${node}`, container: 'main' },
      ports,
      socketPath,
      identities: { anonymous: {}, authorized: admin.nobody, 'foreign-cert': foreign.nobody },
      admin: { cert: admin.own },
      secondUser: { cert: second.own },
      logFile: p.logFile,
      cri: env.cri,
      manifests: env.manifests,
      scratch,
      clientCAFile: pki.clientCAFile,
      execInPod: (cmd) => criExec(env.cri, target.pod, cmd),
      // Standalone, the recorded events are the console's ring: in the feed's first message.
      events: async () => eventLines((await consoleFeed(target)).body ?? ''),
      async stop() {
        await p.stop();
        await env.close();
      },
    };
    await eventually(
      `${name}: the probed pod Running`,
      async () => {
        await p.assertRunning();
        const r = await adminRequest(target, '/pods').catch(() => undefined);
        if (r?.status !== 200 || !r.body) return undefined;
        const list = JSON.parse(r.body) as {
          items: { metadata: { name: string }; status?: { phase?: string } }[];
        };
        return list.items.some((i) => i.metadata.name === target.pod.name && i.status?.phase === 'Running')
          ? true
          : undefined;
      },
      120_000,
      () => ({ log: '(see the log file)', logFile: p.logFile }),
    );
    // The container has written its markers once they can be read back.
    await eventually('the markers written', async () =>
      (await target.execInPod(['cat', '/mem/secret.txt']).catch(() => '')).includes(SECRET_MARKERS.tmpfs)
        ? true
        : undefined,
    );
    if (racing) target.race = await racing;
    return target;
  } catch (err) {
    const log = proc ? await readFile(proc.logFile, 'utf8').catch(() => '') : '';
    await proc?.stop();
    await env.close();
    throw new Error(`${name}: setup failed: ${String(err)}\n${log.split('\n').slice(-30).join('\n')}`, {
      cause: err,
    });
  }
}
