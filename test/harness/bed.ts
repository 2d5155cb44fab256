/**
 * The test bed from the command line:
 *   node test/harness/bed.ts up       start containerd detached (idempotent), import images, print the endpoint
 *   node test/harness/bed.ts down     stop it
 *   node test/harness/bed.ts status   say whether it answers, and which images it has
 *   node test/harness/bed.ts clean    stop and remove every pod sandbox in it
 *   node test/harness/bed.ts cluster-up      start etcd + kube-apiserver + controller-manager + scheduler
 *                                            detached (idempotent; builds Kubernetes the first time)
 *   node test/harness/bed.ts cluster-down    stop them
 *   node test/harness/bed.ts cluster-status  say which components run and answer
 * Set TSKUBELET_BED_VERBOSE=1 for progress logs on stderr.
 */
import { createLogger, nullLogger } from '../../src/util/logger.ts';
import { describeError } from '../../src/util/errors.ts';
import { BED_PATHS, BED_POD_SUBNET, bedContainerdPid, criAnswers, stopBedContainerd } from './containerd.ts';
import { BED_IMAGES, listImages } from './images.ts';
import { removeAllPods, startContainerd } from './index.ts';
import { CLUSTER_PATHS, clusterStatus, startCluster, stopCluster } from './cluster/index.ts';

const logger = process.env.TSKUBELET_BED_VERBOSE
  ? createLogger({ verbosity: 2, format: 'text' })
  : nullLogger;

async function up(): Promise<void> {
  // The returned bed's stop() is deliberately never called: `up` leaves containerd running.
  const bed = await startContainerd({ logger });
  process.stdout.write(
    `socket=${bed.socket}\nendpoint=${bed.endpoint}\npodSubnet=${bed.podSubnet}\nlog=${BED_PATHS.log}\n`,
  );
}

async function down(): Promise<void> {
  const stopped = await stopBedContainerd(logger);
  process.stdout.write(stopped ? 'stopped\n' : 'not running\n');
}

async function status(): Promise<number> {
  const answers = await criAnswers();
  const pid = await bedContainerdPid();
  const lines = [`running=${answers}`, `pid=${pid ?? ''}`, `socket=${BED_PATHS.socket}`];
  if (answers) {
    const images = await listImages(BED_PATHS.socket);
    for (const spec of BED_IMAGES) lines.push(`image ${spec.ref} ${images.get(spec.ref) ?? 'MISSING'}`);
    lines.push(`podSubnet=${BED_POD_SUBNET}`);
  }
  lines.push(`log=${BED_PATHS.log}`);
  process.stdout.write(lines.join('\n') + '\n');
  return answers ? 0 : 1;
}

async function clusterUp(): Promise<void> {
  // As with `up`, the bed's stop() is deliberately never called: the cluster stays running.
  const bed = await startCluster({ logger });
  process.stdout.write(
    `server=${bed.server}\nadminKubeconfig=${bed.adminKubeconfig}\ncaFile=${bed.caFile}\n` +
      `logs=${CLUSTER_PATHS.logDir}/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler}.log\n` +
      `# point kubectl at it:\nexport KUBECONFIG=${bed.adminKubeconfig}\n`,
  );
}

async function clusterStatusCommand(): Promise<number> {
  const components = await clusterStatus();
  for (const c of components) {
    process.stdout.write(
      `${c.name} running=${c.pid !== undefined} pid=${c.pid ?? ''} healthy=${c.healthy} log=${c.log}\n`,
    );
  }
  process.stdout.write(`export KUBECONFIG=${CLUSTER_PATHS.adminKubeconfig}\n`);
  return components.every((c) => c.healthy) ? 0 : 1;
}

async function main(argv: string[]): Promise<number> {
  switch (argv[0]) {
    case 'up':
      await up();
      return 0;
    case 'down':
      await down();
      return 0;
    case 'status':
      return status();
    case 'clean': {
      const bed = await startContainerd({ logger });
      await removeAllPods(bed);
      process.stdout.write('removed every pod sandbox\n');
      return 0;
    }
    case 'cluster-up':
      await clusterUp();
      return 0;
    case 'cluster-down': {
      const stopped = await stopCluster(logger);
      process.stdout.write(stopped.length > 0 ? `stopped ${stopped.join(' ')}\n` : 'not running\n');
      return 0;
    }
    case 'cluster-status':
      return clusterStatusCommand();
    case 'node-kubeconfig': {
      // A kubeconfig with a node client certificate (CN=system:node:<name>) for `tskubelet --kubeconfig`.
      const name = argv[1];
      if (!name) {
        process.stderr.write('usage: node test/harness/bed.ts node-kubeconfig <nodeName>\n');
        return 2;
      }
      const cluster = await startCluster({ logger });
      process.stdout.write(`${await cluster.kubeletKubeconfig(name)}\n`);
      return 0;
    }
    default:
      process.stderr.write(
        'usage: node test/harness/bed.ts up|down|status|clean|cluster-up|cluster-down|cluster-status|node-kubeconfig <node>\n',
      );
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`bed: ${describeError(err)}\n`);
    process.exitCode = 1;
  },
);
