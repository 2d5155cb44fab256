/**
 * Putting things into a booted node VM: files, and the bed's images into its containerd. Used by
 * the node-VM suites and by the conformance harness when the kubelet under test runs in the VM.
 */
import { dirname } from 'node:path';
import { parse, stringify } from 'yaml';
import { readFile } from 'node:fs/promises';
import type { Logger } from '../../src/util/logger.ts';
import type { NodeVm } from './node-vm.ts';
import { BED_IMAGES, buildImage } from './images.ts';
import { NODE_VM_HOST_ADDRESS } from './cluster/paths.ts';

/** Writes files into the guest (parents made), as root. */
export async function writeGuestFiles(vm: NodeVm, files: readonly [string, string][]): Promise<void> {
  for (const [file, text] of files) {
    await vm.run(`mkdir -p ${dirname(file)} && cat > ${file}`, { input: Buffer.from(text) });
  }
}

/** Imports the bed's images (busybox, pause) into the guest's containerd (namespace k8s.io). */
export async function importBedImages(vm: NodeVm, logger: Logger): Promise<void> {
  for (const spec of BED_IMAGES) {
    const img = await buildImage(spec, logger);
    await vm.run('ctr -n k8s.io images import -', { input: await readFile(img.tarPath), timeoutMs: 300_000 });
  }
}

export interface GuestUnit {
  /** The systemd unit's name, e.g. `tskubelet.service`. */
  unit: string;
  /** Its unit file's text (e.g. deploy/systemd/tskubelet.service). */
  unitFile: string;
  /** The command line run instead of the unit file's ExecStart. */
  execStart: string;
  /** Where its stdout and stderr are appended (a path the guest can write: a read-write share). */
  logFile: string;
}

/**
 * Installs a unit with its ExecStart replaced in a drop-in (as kubeadm's 10-kubeadm.conf does) and
 * its output appended to `logFile`, then enables and starts it.
 */
export async function installGuestUnit(vm: NodeVm, u: GuestUnit): Promise<void> {
  const dropIn = [
    '[Service]',
    'ExecStart=',
    `ExecStart=${u.execStart}`,
    `StandardOutput=append:${u.logFile}`,
    'StandardError=inherit',
  ].join('\n');
  await writeGuestFiles(vm, [
    [`/etc/systemd/system/${u.unit}`, u.unitFile],
    [`/etc/systemd/system/${u.unit}.d/10-test.conf`, `${dropIn}\n`],
  ]);
  await vm.run(`systemctl daemon-reload && systemctl enable --now ${u.unit}`);
}

/** The host's kubeconfig with its server moved to the host's loopback as the guest sees it. */
export function guestKubeconfig(text: string): string {
  const doc = parse(text) as { clusters?: { cluster?: { server?: string } }[] };
  for (const c of doc.clusters ?? []) {
    if (c.cluster?.server === undefined) continue;
    const url = new URL(c.cluster.server);
    if (url.hostname !== '127.0.0.1' && url.hostname !== 'localhost') continue;
    url.hostname = NODE_VM_HOST_ADDRESS;
    c.cluster.server = url.origin;
  }
  return stringify(doc);
}
