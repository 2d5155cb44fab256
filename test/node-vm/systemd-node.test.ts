/**
 * tskubelet on a real 2026 node (the node VM: systemd as PID 1, pure cgroup v2, logind, containerd
 * with SystemdCgroup = true), installed as a systemd service from deploy/systemd/tskubelet.service
 * with a kubeadm-style KubeletConfiguration (`cgroupDriver: systemd`). Static pods, one per QoS class
 * and one that exceeds its memory limit: their slices are read back from the cgroup files, checked
 * against /stats/summary, the OOM kill reported; then `systemctl poweroff` must end the pods
 * gracefully under logind's delay inhibitor and power the VM off in time. Upstream's counterparts:
 * the node e2e suite on a cgroup v2 image (test/e2e_node: pods_container_manager_test.go,
 * summary_test.go, node_shutdown_linux_test.go), which likewise runs the kubelet as a unit.
 *
 * The quick mode of the node-VM suite (part of scripts/test.sh): one boot, ~3-6 minutes under TCG
 * after the image is cached (scripts/build-node-vm.sh builds it, ~2-7 minutes, once).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BED_IMAGES, buildImage, bootNodeVm, CHECKOUT, type NodeVm } from '../harness/index.ts';
import { defaultShares } from '../harness/node-vm-host.ts';
import { run } from '../harness/exec.ts';
import { buildManifest } from '../kit/pod.ts';
import { until } from '../kit/poll.ts';
import { createLogger, nullLogger, type Logger } from '../../src/util/logger.ts';
import type { Pod } from '../../src/api/types.ts';

function testLogger(): Logger {
  return process.env.TSKUBELET_TEST_VERBOSE ? createLogger({ verbosity: 4, format: 'text' }) : nullLogger;
}

/** A cold image build plus a boot on a busy machine. */
const SETUP_TIMEOUT_MS = 40 * 60_000;
const GUEST_TIMEOUT_MS = 180_000;
/** Node's first start in the guest reads its binary over 9p and compiles under TCG. */
const PODS_TIMEOUT_MS = 8 * 60_000;
const SHUTDOWN_GRACE_S = 20;
const CRITICAL_GRACE_S = 10;
const MANIFESTS = '/etc/kubernetes/manifests';
const CONFIG = '/var/lib/kubelet/config.yaml';
const SOCKET = 'unix:///run/containerd/containerd.sock';

/** The kubeadm-style configuration file (what `kubeadm join` writes, for the fields it sets). */
const KUBELET_CONFIG = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
staticPodPath: ${MANIFESTS}
readOnlyPort: 10255
fileCheckFrequency: 5s
shutdownGracePeriod: ${SHUTDOWN_GRACE_S}s
shutdownGracePeriodCriticalPods: ${CRITICAL_GRACE_S}s
`;

/** A pod that records SIGTERM and its preStop hook in the results folder, then exits. */
function markingPod(name: string, resources: Record<string, Record<string, string>>, results: string): Pod {
  const mark = (what: string) => `echo ${what} $(date +%s) >> /results/${name}`;
  return buildManifest(name, {
    image: 'docker.io/library/busybox:1.29',
    containers: [
      {
        name: 'c',
        command: ['sh', '-c', `trap '${mark('TERM')}; exit 0' TERM; while :; do sleep 1; done`],
        resources,
        volumeMounts: [{ name: 'results', mountPath: '/results' }],
        lifecycle: { preStop: { exec: { command: ['sh', '-c', mark('preStop')] } } },
      },
    ],
    volumes: [{ name: 'results', hostPath: { path: results, type: 'Directory' } }],
  });
}

interface PodView {
  metadata: { name: string; uid: string };
  status?: {
    phase?: string;
    qosClass?: string;
    containerStatuses?: {
      containerID?: string;
      state?: { running?: object; terminated?: { reason?: string; exitCode?: number } };
    }[];
  };
}

describe('a systemd node with cgroup v2 (node VM, quick mode)', () => {
  let vm: NodeVm | undefined;
  let results = '';
  const guest = (): NodeVm => {
    assert.ok(vm, 'the node VM did not boot (see the before hook)');
    return vm;
  };
  const sh = async (command: string): Promise<string> =>
    (await guest().run(command, { timeoutMs: GUEST_TIMEOUT_MS })).stdout.trim();
  const podsByName = async (): Promise<Map<string, PodView>> => {
    const text = await sh('curl -s --max-time 20 localhost:10255/pods');
    const items = (JSON.parse(text) as { items: PodView[] }).items;
    // Static pods are named <manifest name>-<node name>.
    const names = ['besteffort', 'burstable', 'guaranteed', 'oom'];
    const byName = new Map<string, PodView>();
    for (const p of items) {
      const name = names.find((n) => p.metadata.name.startsWith(`${n}-`));
      if (name) byName.set(name, p);
    }
    return byName;
  };

  before(
    async () => {
      const logger = testLogger();
      // The guest runs dist/ (bin/tskubelet) from the read-only share: it must be current here.
      await run('bash', [`${CHECKOUT}/scripts/build.sh`, '--if-stale'], { timeoutMs: 300_000 });
      results = await mkdtemp(path.join(tmpdir(), 'tskubelet-node-vm-results-'));
      await chmod(results, 0o777);
      vm = await bootNodeVm({
        logger,
        shares: [...(await defaultShares()), { hostPath: results, readOnly: false }],
      });
      for (const spec of BED_IMAGES) {
        const img = await buildImage(spec, logger);
        await vm.run('ctr -n k8s.io images import -', {
          input: await readFile(img.tarPath),
          timeoutMs: 300_000,
        });
      }
      const manifests: [string, Pod][] = [
        ['besteffort', markingPod('besteffort', {}, results)],
        ['burstable', markingPod('burstable', { requests: { cpu: '100m', memory: '32Mi' } }, results)],
        [
          'guaranteed',
          markingPod(
            'guaranteed',
            { requests: { cpu: '200m', memory: '64Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
            results,
          ),
        ],
        [
          'oom',
          buildManifest('oom', {
            image: 'docker.io/library/busybox:1.29',
            restartPolicy: 'Never',
            // tail buffers /dev/zero looking for a line and outgrows the limit; it is the shell's
            // child, so only memory.oom.group (the whole container killed) ends the container.
            containers: [
              {
                name: 'c',
                command: ['sh', '-c', 'tail /dev/zero; sleep 3600'],
                resources: { limits: { memory: '16Mi' } },
              },
            ],
          }),
        ],
      ];
      const unit = await readFile(path.join(CHECKOUT, 'deploy/systemd/tskubelet.service'), 'utf8');
      const dropIn = [
        '[Service]',
        'ExecStart=',
        `ExecStart=${CHECKOUT}/bin/tskubelet run --config=${CONFIG} --container-runtime-endpoint=${SOCKET} --v=2`,
        `StandardOutput=append:${results}/kubelet.log`,
        'StandardError=inherit',
      ].join('\n');
      const files: [string, string][] = [
        ['/etc/systemd/system/tskubelet.service', unit],
        ['/etc/systemd/system/tskubelet.service.d/10-checkout.conf', `${dropIn}\n`],
        [CONFIG, KUBELET_CONFIG],
        ...manifests.map(([name, pod]): [string, string] => [
          `${MANIFESTS}/${name}.yaml`,
          JSON.stringify(pod),
        ]),
      ];
      for (const [file, text] of files) {
        await vm.run(`mkdir -p ${path.dirname(file)} && cat > ${file}`, { input: Buffer.from(text) });
      }
      await vm.run('grep -q "SystemdCgroup = true" /etc/containerd/config.toml');
      await vm.run('systemctl daemon-reload && systemctl enable --now tskubelet.service');
      await until(
        'every pod running and the OOM pod ended',
        async () => {
          const pods = await podsByName().catch(() => undefined);
          if (!pods) return undefined;
          const running = ['besteffort', 'burstable', 'guaranteed'].every(
            (n) => pods.get(n)?.status?.containerStatuses?.[0]?.state?.running,
          );
          return running && pods.get('oom')?.status?.containerStatuses?.[0]?.state?.terminated
            ? pods
            : undefined;
        },
        {
          timeoutMs: PODS_TIMEOUT_MS,
          intervalMs: 3_000,
          describe: async () => ({
            unit: await sh('systemctl status tskubelet --no-pager -n 0 || true'),
            log: await sh(`tail -n 30 ${results}/kubelet.log || true`),
          }),
        },
      );
    },
    { timeout: SETUP_TIMEOUT_MS },
  );
  after(
    async () => {
      await vm?.stop();
      if (results) await rm(results, { recursive: true, force: true });
    },
    { timeout: 180_000 },
  );

  it('runs as a systemd service with cgroupDriver: systemd from a kubeadm-style config file', async () => {
    assert.equal(await sh('systemctl is-active tskubelet.service'), 'active');
    const log = await readFile(path.join(results, 'kubelet.log'), 'utf8');
    const started = log.split('\n').find((l) => l.includes('pod cgroups per QoS class'));
    assert.match(
      started ?? '',
      /driver"?[:=]"?systemd/,
      'the container manager started with the systemd driver',
    );
    // Each container runs in a scope containerd made inside its pod's slice.
    const pods = await podsByName();
    const id = pods
      .get('burstable')
      ?.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
    assert.ok(id, 'the burstable pod has a container ID');
    const uid = pods.get('burstable')?.metadata.uid.replaceAll('-', '_');
    const pid = await sh(`ctr -n k8s.io task ls | awk '$1 == "${id}" { print $2 }'`);
    assert.equal(
      await sh(`cat /proc/${pid}/cgroup`),
      `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid}.slice/cri-containerd-${id}.scope`,
    );
  });

  it('sizes each QoS class’s pod slice with upstream’s cgroup v2 values', async () => {
    const pods = await podsByName();
    const slice = (name: string, qos: string): string => {
      const uid = pods.get(name)?.metadata.uid.replaceAll('-', '_');
      assert.ok(uid, `pod ${name} is known`);
      return qos === ''
        ? `kubepods.slice/kubepods-pod${uid}.slice`
        : `kubepods.slice/kubepods-${qos}.slice/kubepods-${qos}-pod${uid}.slice`;
    };
    const read = (dir: string) =>
      sh(
        `cd /sys/fs/cgroup/${dir} && echo "$(cat cpu.weight)|$(cat cpu.max)|$(cat memory.max)|$(cat pids.max)"`,
      );
    // cpu.weight = 1 + (shares − 2) × 9999 / 262142; shares = milliCPU × 1024 / 1000 (min 2).
    assert.equal(await read(slice('besteffort', 'besteffort')), '1|max 100000|max|max');
    assert.equal(await read(slice('burstable', 'burstable')), '4|max 100000|max|max');
    assert.equal(await read(slice('guaranteed', '')), `8|20000 100000|${64 * 2 ** 20}|max`);
    assert.equal(await read('kubepods.slice/kubepods-besteffort.slice'), '1|max 100000|max|max');
    // systemd knows them as slices of kubepods.slice, as it does its own.
    assert.equal(await sh('systemctl show -p Wants --value kubepods-burstable.slice'), 'kubepods.slice');
    assert.equal(await sh('systemctl is-active kubepods.slice'), 'active');
  });

  it('reports in /stats/summary what the pod slices’ cgroup files say', async () => {
    const pods = await podsByName();
    const uid = pods.get('guaranteed')?.metadata.uid ?? '';
    const dir = `/sys/fs/cgroup/kubepods.slice/kubepods-pod${uid.replaceAll('-', '_')}.slice`;
    const files = `echo "$(grep usage_usec ${dir}/cpu.stat | cut -d' ' -f2) $(cat ${dir}/memory.current) $(grep '^inactive_file' ${dir}/memory.stat | cut -d' ' -f2)"`;
    const out = await sh(
      `${files}; curl -s --max-time 60 localhost:10255/stats/summary > /tmp/summary.json; ${files}`,
    );
    const [before, after] = out.split('\n').map((l) => l.split(' ').map(Number));
    assert.ok(before && after && before.length === 3 && after.length === 3, out);
    const summary = JSON.parse(await sh('cat /tmp/summary.json')) as {
      node: { cpu?: { usageNanoCores?: number } };
      pods: {
        podRef: { uid: string };
        cpu?: { usageCoreNanoSeconds?: number };
        memory?: { workingSetBytes?: number; usageBytes?: number };
      }[];
    };
    const cpus = Number(await sh('nproc'));
    const nodeCores = (summary.node.cpu?.usageNanoCores ?? 0) / 1e9;
    assert.ok(nodeCores > 0 && nodeCores <= cpus * 1.05, `node usage ${nodeCores} cores on ${cpus} CPUs`);
    const stats = summary.pods.find((p) => p.podRef.uid === uid);
    assert.ok(stats, 'the guaranteed pod is in the summary');
    const cpu = stats.cpu?.usageCoreNanoSeconds ?? -1;
    // The summary may be read a little before the first file read (its cache), never after the last.
    assert.ok(
      cpu > 0 && cpu <= (after[0] ?? 0) * 1000,
      `cpu ${cpu} ns vs cpu.stat ${before[0]}…${after[0]} µs`,
    );
    const ws = stats.memory?.workingSetBytes ?? -1;
    const wsFiles = [(before[1] ?? 0) - (before[2] ?? 0), (after[1] ?? 0) - (after[2] ?? 0)];
    const lo = Math.min(...wsFiles) * 0.8;
    const hi = Math.max(...wsFiles) * 1.2;
    assert.ok(
      ws >= lo && ws <= hi,
      `working set ${ws} vs memory.current − inactive_file ${wsFiles.join('…')}`,
    );
  });

  it('kills the whole container at its memory limit (memory.oom.group) and reports it OOMKilled', async () => {
    const oom = (await podsByName()).get('oom');
    const terminated = oom?.status?.containerStatuses?.[0]?.state?.terminated;
    assert.equal(terminated?.reason, 'OOMKilled', JSON.stringify(oom?.status));
    assert.equal(terminated?.exitCode, 137);
    assert.equal(oom?.status?.phase, 'Failed');
  });

  it('ends the pods gracefully on systemctl poweroff, under logind’s delay lock, and lets the node go', async () => {
    const locks = await sh('systemd-inhibit --list --no-pager --no-legend');
    assert.match(locks, /kubelet.*shutdown.*delay/, locks);
    const start = Date.now();
    await guest().stop({ timeoutMs: (SHUTDOWN_GRACE_S + 120) * 1000 });
    const tookS = (Date.now() - start) / 1000;
    const log = await readFile(path.join(results, 'kubelet.log'), 'utf8');
    assert.match(log, /node is shutting down: killing pods/);
    assert.match(log, /released the shutdown inhibitor lock/);
    const marks = new Map<string, string>();
    for (const f of await readdir(results)) {
      if (f !== 'kubelet.log') marks.set(f, await readFile(path.join(results, f), 'utf8'));
    }
    for (const name of ['besteffort', 'burstable', 'guaranteed']) {
      // Static pods are critical pods: they end in the critical pods' share of the grace period.
      assert.match(
        marks.get(name) ?? '',
        /preStop \d+\nTERM \d+/,
        `${name}: ${marks.get(name) ?? '(nothing)'}`,
      );
    }
    // Shutdown itself under TCG takes a while; the pods' part is bounded by the grace period.
    assert.ok(tookS < SHUTDOWN_GRACE_S + 90, `poweroff took ${tookS} s`);
  });
});
