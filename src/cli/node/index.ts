/**
 * The node CLI's commands (`get pods`, `describe pod`, `logs`, `exec`, `timeline`, `why`, and
 * crictl's read-only `ps`, `images`, `inspect`, `stats` over the local socket) added to
 * the `tskubelet` program. Only commander is loaded here: each command's code (HTTP, TLS, YAML,
 * printers) is imported when that command runs, so `tskubelet run` pays nothing for the CLI.
 */
import { Command, Option } from 'commander';

interface ConnectionFlags {
  socket?: string;
  kubeconfig?: string;
  context?: string;
  server?: string;
  insecureSkipTlsVerify?: boolean;
  namespace?: string;
}

function withConnection(cmd: Command, namespaced = true): Command {
  cmd
    .option(
      '--socket <path>',
      "the kubelet's local socket (default /var/lib/kubelet/tskubelet.sock; root only)",
    )
    .option(
      '--kubeconfig <file>',
      'client certificate or token for the kubelet API over HTTPS (with --server)',
    )
    .option('--context <name>', 'the kubeconfig context (default: its current-context)')
    .option('--server <url>', 'the kubelet API, e.g. https://HOST:10250')
    .option('--insecure-skip-tls-verify', "do not verify the kubelet's serving certificate");
  if (namespaced) cmd.option('-n, --namespace <ns>', 'the namespace (default "default")');
  return cmd;
}

interface LogsFlags {
  container?: string;
  follow?: boolean;
  tail?: number;
  previous?: boolean;
  timestamps?: boolean;
  since?: string;
  sinceTime?: string;
  limitBytes?: number;
  allContainers?: boolean;
}

interface ExecFlags {
  container?: string;
  stdin?: boolean;
  tty?: boolean;
}

function connection(o: ConnectionFlags) {
  return {
    ...(o.socket !== undefined ? { socket: o.socket } : {}),
    ...(o.kubeconfig !== undefined ? { kubeconfig: o.kubeconfig } : {}),
    ...(o.context !== undefined ? { context: o.context } : {}),
    ...(o.server !== undefined ? { server: o.server } : {}),
    ...(o.insecureSkipTlsVerify ? { insecureSkipTlsVerify: true } : {}),
    ...(o.namespace !== undefined ? { namespace: o.namespace } : {}),
  };
}

function integerFlag(flag: string): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!Number.isInteger(n)) throw new Error(`${flag} ${v}: not an integer`);
    return n;
  };
}
const parseTail = integerFlag('--tail');

const POD_RESOURCES = new Set(['pods', 'pod', 'po']);

/** kubectl's answer for a resource tskubelet does not have; false when `resource` is not pods. */
function checkPods(resource: string): boolean {
  if (POD_RESOURCES.has(resource)) return true;
  process.stderr.write(`error: the kubelet doesn't have a resource type "${resource}" (it serves pods)\n`);
  process.exitCode = 1;
  return false;
}

async function run(flags: ConnectionFlags, body: Parameters<typeof import('./runner.ts').runNodeCommand>[1]) {
  const { runNodeCommand } = await import('./runner.ts');
  process.exitCode = await runNodeCommand(connection(flags), body);
}

/** Adds the node commands to `program`. */
export function addNodeCommands(program: Command): void {
  withConnection(
    program
      .command('get')
      .description("list the node's pods (kubectl get pods)")
      .argument('<resource>', 'pods')
      .argument('[name]', 'one pod')
      .addOption(
        new Option(
          '-o, --output <format>',
          'wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=HEADER:PATH,...',
        ),
      )
      .option(
        '-l, --selector <selector>',
        'only pods whose labels match (k=v, k!=v, k in (a,b), k notin (a), k, !k)',
      )
      .option('--show-labels', 'a last column with the pod labels')
      .option('--no-headers', 'no header line (tables and custom-columns)')
      .option('-w, --watch', 'print a pod again when it changes')
      .option('-A, --all-namespaces', 'pods of every namespace'),
  ).action(
    async (
      resource: string,
      name: string | undefined,
      o: ConnectionFlags & {
        output?: string;
        watch?: boolean;
        allNamespaces?: boolean;
        selector?: string;
        showLabels?: boolean;
        headers?: boolean;
      },
    ) => {
      if (!checkPods(resource)) return;
      await run(o, async (client, io) => {
        const { runGetPods } = await import('./get-pods.ts');
        const opts = {
          ...connection(o),
          output: o.output,
          watch: o.watch,
          allNamespaces: o.allNamespaces,
          selector: o.selector,
          showLabels: o.showLabels,
          noHeaders: o.headers === false,
        };
        return runGetPods(client, name, opts, io);
      });
    },
  );

  withConnection(
    program
      .command('describe')
      .description('show a pod in detail (kubectl describe pod)')
      .argument('<resource>', 'pod')
      .argument('<name>'),
  ).action(async (resource: string, name: string, o: ConnectionFlags) => {
    if (!checkPods(resource)) return;
    await run(o, async (client, io) => {
      const { runDescribePod } = await import('./describe-pod.ts');
      return runDescribePod(client, name, connection(o), io);
    });
  });

  withConnection(
    program
      .command('logs')
      .description("print a container's log (kubectl logs)")
      .argument('<name>', 'the pod')
      .option('-c, --container <name>', 'the container (default: the only or first one)')
      .option('-f, --follow', 'keep printing as the container writes')
      .option('--tail <lines>', 'only the last N lines', parseTail)
      .option('-p, --previous', "the previous instance's log (after a restart)")
      .option('--timestamps', 'prefix each line with its time')
      .option('--since <duration>', 'only lines newer than this (5s, 2m, 3h)')
      .option('--since-time <time>', 'only lines after this RFC 3339 time')
      .option('--limit-bytes <n>', 'at most this many bytes', integerFlag('--limit-bytes'))
      .option('--all-containers', 'the logs of every container (init ones first)'),
  ).action(async (name: string, o: ConnectionFlags & LogsFlags) => {
    await run(o, async (client, io) => {
      const { runLogs } = await import('./logs.ts');
      const { container, follow, tail, previous, timestamps, since, sinceTime, limitBytes, allContainers } =
        o;
      const opts = {
        container,
        follow,
        tail,
        previous,
        timestamps,
        since,
        sinceTime,
        limitBytes,
        allContainers,
      };
      return runLogs(client, name, { ...connection(o), ...opts }, io);
    });
  });

  withConnection(
    program
      .command('exec')
      .description('run a command in a container (kubectl exec); the command follows --')
      .argument('<name>', 'the pod')
      .argument('[command...]', 'the command and its arguments, after --')
      .option('-c, --container <name>', 'the container (default: the only or first one)')
      .option('-i, --stdin', 'pass stdin to the command')
      .option('-t, --tty', 'allocate a terminal (with -i)'),
  ).action(async (name: string, command: string[], o: ConnectionFlags & ExecFlags) => {
    await run(o, async (client, io) => {
      const { runExec } = await import('./exec.ts');
      const opts = { ...connection(o), container: o.container, stdin: o.stdin, tty: o.tty };
      return runExec(client, name, command, opts, io, {
        stdin: process.stdin,
        columns: () => process.stdout.columns,
        rows: () => process.stdout.rows,
        onResize: (l) => {
          process.stdout.on('resize', l);
          return () => process.stdout.off('resize', l);
        },
      });
    });
  });

  withConnection(
    program
      .command('ps')
      .description("list the node's containers (crictl ps; local socket only)")
      .option('-a, --all', 'all containers, not only running ones')
      .option('-p, --pod <id>', 'only the containers of this pod sandbox id')
      .option('-q, --quiet', 'only the container ids'),
    false,
  ).action(async (o: ConnectionFlags & { all?: boolean; pod?: string; quiet?: boolean }) => {
    await run(o, async (client, io) => {
      const { runPs } = await import('./containers.ts');
      return runPs(client, { all: o.all, pod: o.pod, quiet: o.quiet }, io);
    });
  });

  withConnection(
    program
      .command('images')
      .description("list the node's images (crictl images; local socket only)")
      .option('-q, --quiet', 'only the image ids'),
    false,
  ).action(async (o: ConnectionFlags & { quiet?: boolean }) => {
    await run(o, async (client, io) =>
      (await import('./containers.ts')).runImages(client, { quiet: o.quiet }, io),
    );
  });

  withConnection(
    program
      .command('inspect')
      .description("a container's status and the runtime's info, as JSON (crictl inspect; local socket only)")
      .argument('<container...>', 'container ids (a unique prefix will do)'),
    false,
  ).action(async (ids: string[], o: ConnectionFlags) => {
    await run(o, async (client, io) => (await import('./containers.ts')).runInspect(client, ids, io));
  });

  withConnection(
    program
      .command('stats')
      .description("the containers' CPU, memory and disk use (crictl stats; local socket only)")
      .option('-a, --all', 'all containers, not only running ones'),
    false,
  ).action(async (o: ConnectionFlags & { all?: boolean }) => {
    await run(o, async (client, io) =>
      (await import('./containers.ts')).runStats(client, { all: o.all }, io),
    );
  });

  for (const [what, description] of [
    ['timeline', "a pod's startup and termination steps, with their times"],
    ['why', 'why a pod is not running or not ready, with the evidence'],
  ] as const) {
    withConnection(
      program
        .command(what)
        .description(description)
        .argument('<name>', 'the pod')
        .addOption(new Option('-o, --output <format>', 'json for the raw document').choices(['json'])),
    ).action(async (name: string, o: ConnectionFlags & { output?: string }) => {
      await run(o, async (client, io) => {
        const opts = { ...connection(o), ...(o.output ? { output: o.output } : {}) };
        if (what === 'timeline') return (await import('./timeline.ts')).runTimeline(client, name, opts, io);
        return (await import('./why.ts')).runWhy(client, name, opts, io);
      });
    });
  }
}
