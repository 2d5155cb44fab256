/**
 * Reconnaissance for issue 26 (not a test, asserts nothing): boots the node VM, imports the bed's
 * busybox and pause images into the guest's containerd, and runs tskubelet from the shared checkout
 * in the guest with `--cgroup-driver=cgroupfs`, `--cgroups-per-qos` true and false, against
 * containerd with the systemd and then the cgroupfs runc driver (guest/recon-tskubelet.sh prints
 * what works and what breaks on cgroup v2). Upstream's counterpart is running the node e2e suite on
 * a cgroup v2 image (kubernetes/kubernetes test/e2e_node). Takes 10-20 minutes under TCG.
 *
 *   node test/node-vm/recon-tskubelet.ts [systemd:true systemd:false cgroupfs:true cgroupfs:false]
 */
import { buildImage, BED_IMAGES, bootNodeVm, CHECKOUT } from '../harness/index.ts';
import { readFile } from 'node:fs/promises';
import { createLogger } from '../../src/util/logger.ts';
import { run } from '../harness/exec.ts';

const logger = createLogger({ verbosity: 2, format: 'text' });
const variants = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ['systemd:true', 'systemd:false', 'cgroupfs:true', 'cgroupfs:false'];

// The guest runs dist/ (bin/tskubelet) from a read-only share: it must be current here.
await run('bash', [`${CHECKOUT}/scripts/build.sh`, '--if-stale'], { timeoutMs: 300_000 });
const vm = await bootNodeVm({ logger });
try {
  process.stdout.write(`# node VM booted in ${vm.bootMs} ms (${vm.systemState})\n`);
  for (const spec of BED_IMAGES) {
    const img = await buildImage(spec, logger);
    await vm.run('ctr -n k8s.io images import -', { input: await readFile(img.tarPath), timeoutMs: 300_000 });
  }
  for (const v of variants) {
    const [driver, perQos] = v.split(':');
    const r = await vm.exec(`bash ${CHECKOUT}/test/node-vm/guest/recon-tskubelet.sh ${driver} ${perQos}`, {
      timeoutMs: 15 * 60_000,
    });
    process.stdout.write(`${r.stdout}${r.stderr ? `\n(stderr)\n${r.stderr}` : ''}\n(exit ${r.code})\n`);
  }
} finally {
  await vm.stop();
}
