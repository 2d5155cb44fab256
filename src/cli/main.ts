#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { routeArgs } from './argv.ts';
import { buildRunCommand } from './flags.ts';
import { addNodeCommands } from './node/index.ts';
import { runKubelet } from './run.ts';
import { versionText } from './version.ts';
import { describeError } from '../util/errors.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** Upstream-compatible version string the kubelet reports (e.g. in node info later). */
export const TSKUBELET_VERSION = `v${pkg.version}`;

const program = new Command('tskubelet')
  .description('A Kubernetes kubelet written in TypeScript: runs pods on containerd over CRI.')
  .showHelpAfterError();

program.addCommand(
  buildRunCommand(
    async ({ config, warnings }) => {
      process.exitCode = await runKubelet(config, warnings, TSKUBELET_VERSION);
    },
    {},
    (request) => process.stdout.write(versionText(request, TSKUBELET_VERSION)),
  ),
);
program
  .command('version')
  .description('print the tskubelet version')
  .action(() => {
    process.stdout.write(`tskubelet ${TSKUBELET_VERSION}\n`);
  });
// get pods, describe, logs, exec, timeline, why: loaded only when one of them runs.
addNodeCommands(program);

try {
  // bin/tskubelet says how it was invoked (a `kubelet` link means the kubelet's command line).
  const invokedAs = process.env.TSKUBELET_INVOKED_AS ?? 'tskubelet';
  // Not for the processes the kubelet starts (openssl, exec credential plugins).
  delete process.env.TSKUBELET_INVOKED_AS;
  const args = routeArgs(process.argv.slice(2), invokedAs);
  await program.parseAsync(args, { from: 'user' });
} catch (err) {
  if (err instanceof CommanderError) {
    process.exitCode = err.exitCode;
  } else {
    process.stderr.write(`tskubelet: ${describeError(err)}\n`);
    process.exitCode = 1;
  }
}
