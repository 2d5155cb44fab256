/**
 * Writes tskubelet(1) to stdout: the `run` command's options (built from the config field table,
 * as the CLI builds them) and the node CLI's commands, rendered by src/cli/man-page.ts, plus what
 * the .deb adds (files, environment). scripts/package.sh installs it as
 * /usr/share/man/man1/tskubelet.1.gz. Upstream counterpart: kubernetes/kubernetes cmd/genman.
 *
 *   node scripts/man-page.ts VERSION DATE    e.g. node scripts/man-page.ts 0.1.0 2026-11-28
 */
import { Command } from 'commander';
import { buildRunCommand } from '../src/cli/flags.ts';
import { addNodeCommands } from '../src/cli/node/index.ts';
import { renderManPage } from '../src/cli/man-page.ts';

const [version, date] = process.argv.slice(2);
if (!version || !date || !/^\d{4}-\d{2}-\d{2}$/.test(date)) {
  process.stderr.write('usage: node scripts/man-page.ts VERSION YYYY-MM-DD\n');
  process.exit(2);
}

const run = buildRunCommand(() => Promise.resolve());
// The node CLI's commands as main.ts adds them (their code loads only when one runs).
const program = new Command('tskubelet');
addNodeCommands(program);

process.stdout.write(
  renderManPage({
    name: 'tskubelet',
    section: '1',
    source: `tskubelet ${version}`,
    date,
    summary: 'the Kubernetes node agent (a kubelet written in TypeScript)',
    synopsis: ['tskubelet run [OPTIONS]', 'kubelet [OPTIONS]', 'tskubelet COMMAND [OPTIONS] [ARGS]'],
    description: [
      'tskubelet runs pods on a CRI container runtime (containerd): static pods from a directory or URL, and, ' +
        'with --kubeconfig, the pods a Kubernetes API server binds to the node, whose status it reports.',
      'Settings come from a KubeletConfiguration file (--config) and from flags, which override the file. ' +
        'Upstream kubelet flags that tskubelet does not implement are accepted, ignored and reported as warnings, ' +
        'so an existing kubelet command line keeps working.',
      'Installed by the tskubelet-kubelet package as /usr/bin/kubelet, it runs under the kubelet.service unit ' +
        'and the drop-in kubeadm writes for it.',
    ],
    options: run,
    commands: program.commands,
    sections: [
      {
        title: 'Files',
        entries: [
          {
            term: '/var/lib/kubelet/config.yaml',
            text: 'the KubeletConfiguration file the units pass with --config',
          },
          {
            term: '/etc/default/tskubelet',
            text: 'KUBELET_EXTRA_ARGS and node settings for tskubelet.service',
          },
          {
            term: '/etc/default/kubelet',
            text: "KUBELET_EXTRA_ARGS for kubelet.service, read by kubeadm's drop-in (package tskubelet-kubelet)",
          },
          {
            term: '/var/lib/kubelet/tskubelet.sock',
            text: "the kubelet API on a local socket, root only (the node CLI's default)",
          },
          { term: '/usr/lib/tskubelet', text: 'the bundled JavaScript and the Node.js runtime it runs on' },
        ],
      },
      {
        title: 'Environment',
        entries: [
          {
            term: 'TSKUBELET_NODE_FLAGS',
            text: 'Node.js flags of the kubelet process, replacing the default --max-semi-space-size=2; empty for none',
          },
          { term: 'MALLOC_ARENA_MAX', text: 'glibc malloc arenas; 2 unless set' },
        ],
      },
      {
        title: 'See also',
        paragraphs: [
          'kubeadm(1), containerd(8), https://kubernetes.io/docs/reference/command-line-tools-reference/kubelet/',
        ],
      },
    ],
  }),
);
