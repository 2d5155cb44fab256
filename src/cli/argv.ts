/**
 * Which command a command line means (upstream: the kubelet binary has no sub-commands, every
 * argument is a flag). `tskubelet` keeps its verbs (run, version, get, describe, logs, exec,
 * timeline, why) and takes a kubelet command line as is: when the first argument is a flag other
 * than help (`tskubelet --kubeconfig=… --config=…`, `tskubelet --version`), it means `run`.
 * `tskubelet` alone and `tskubelet --help` print the verbs. Invoked as `kubelet` (bin/kubelet, a
 * /usr/bin/kubelet link) every command line means `run`, no arguments included, as upstream.
 */

const HELP = new Set(['-h', '--help']);

/** The arguments for the `tskubelet` program (without node and the script), `run` added when meant. */
export function routeArgs(args: readonly string[], invokedAs: string): string[] {
  if (invokedAs === 'kubelet') return ['run', ...args];
  const [first] = args;
  if (first !== undefined && first.startsWith('-') && !HELP.has(first)) return ['run', ...args];
  return [...args];
}
