/**
 * The kubeadm harness by hand (as root, under the bed lock when tests may run):
 *
 *   flock /tmp/tskubelet-bed.lock node test/harness/kubeadm/main.ts join NODE [--kubelet BIN]
 *       [--signing-duration 10m] [--root-dir DIR] [--v N]
 *     starts the bed (containerd + control plane) if needed, prepares it, runs `kubeadm join` with BIN
 *     (default: the upstream kubelet 1.20.2 of the bed cache) as the node's kubelet, which keeps
 *     running afterwards; prints where the node's files and logs are.
 *   node test/harness/kubeadm/main.ts reset NODE [--root-dir DIR]   stop it, delete the Node, remove its files
 *   node test/harness/kubeadm/main.ts prepare                       only prepare the control plane
 *   node test/harness/kubeadm/main.ts build                         only build kubeadm
 * Set TSKUBELET_BED_VERBOSE=1 for progress logs on stderr. No upstream counterpart.
 */
import { parseArgs } from 'node:util';
import { createLogger, nullLogger } from '../../../src/util/logger.ts';
import { describeError } from '../../../src/util/errors.ts';
import { startContainerd } from '../index.ts';
import { CLUSTER_PATHS, kubernetesBinary, startCluster } from '../cluster/index.ts';
import { ensureKubeadm } from './build.ts';
import { kubeadmJoin, resetKubeadmNode } from './join.ts';
import { prepareControlPlane } from './prepare.ts';

const logger = process.env.TSKUBELET_BED_VERBOSE
  ? createLogger({ verbosity: 2, format: 'text' })
  : nullLogger;

const USAGE =
  'usage: main.ts join NODE [--kubelet BIN] [--signing-duration D] [--root-dir DIR] [--v N] | ' +
  'reset NODE [--root-dir DIR] | prepare | build\n';

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      kubelet: { type: 'string' },
      'signing-duration': { type: 'string' },
      'root-dir': { type: 'string' },
      v: { type: 'string' },
    },
  });
  const [command, nodeName] = positionals;
  switch (command) {
    case 'build':
      process.stdout.write(`${await ensureKubeadm(logger)}\n`);
      return 0;
    case 'prepare': {
      const cluster = await startCluster({ logger });
      const ticket = await prepareControlPlane(cluster, await ensureKubeadm(logger), logger);
      process.stdout.write(
        `kubeadm join ${ticket.endpoint} --token ${ticket.token} --discovery-token-ca-cert-hash ${ticket.caCertHash}\n`,
      );
      return 0;
    }
    case 'join': {
      if (!nodeName) break;
      await startContainerd({ logger });
      const cluster = await startCluster({
        logger,
        ...(values['signing-duration'] !== undefined
          ? { clusterSigningDuration: values['signing-duration'] }
          : {}),
      });
      const node = await kubeadmJoin({
        cluster,
        nodeName,
        kubeletBin: values.kubelet ?? kubernetesBinary('kubelet'),
        ...(values['root-dir'] !== undefined ? { rootDir: values['root-dir'] } : {}),
        ...(values.v !== undefined ? { kubeletExtraArgs: { v: values.v } } : {}),
        logger,
      });
      process.stdout.write(
        `${node.joinOutput.trimEnd()}\n\n` +
          `joined ${nodeName} in ${node.timings.joinMs} ms (prepare ${node.timings.prepareMs} ms); ` +
          `kubelet pid ${(await node.kubelet.pid()) ?? 'NOT RUNNING'}\n` +
          `kubelet command: ${(node.kubelet.lastCommand() ?? []).join(' ')}\n` +
          `node files: ${node.paths.rootDir} (kubeadm log ${node.paths.joinLog}, kubelet log ${node.paths.kubeletLog})\n` +
          `the node's view: nsenter --mount=${node.nsFile} ls /etc/kubernetes /var/lib/kubelet\n` +
          `export KUBECONFIG=${CLUSTER_PATHS.adminKubeconfig}; kubectl get node ${nodeName}; kubectl get csr\n`,
      );
      return 0;
    }
    case 'reset': {
      if (!nodeName) break;
      const cluster = await startCluster({ logger });
      await resetKubeadmNode({
        cluster,
        nodeName,
        ...(values['root-dir'] !== undefined ? { rootDir: values['root-dir'] } : {}),
        logger,
      });
      process.stdout.write(`reset ${nodeName}\n`);
      return 0;
    }
    default:
      break;
  }
  process.stderr.write(USAGE);
  return 2;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`kubeadm harness: ${describeError(err)}\n`);
    process.exitCode = 1;
  },
);
