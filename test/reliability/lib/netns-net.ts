/**
 * The network side of a node in its own network namespace: the namespace, a veth pair to the host
 * namespace on a private /24, and a TCP forwarder in the host namespace that makes the loopback-only
 * kube-apiserver of the cluster bed reachable from the node at `<host side>:<apiserver port>`.
 * A partition (`PartitionMode`) drops the node's traffic to and from the host end of its link, or
 * sets that end down; either way the node reaches nothing outside its namespace and the API server
 * cannot reach its kubelet, until it is healed.
 *
 * Everything is named with `NETNS_PREFIX` so a run that died midway can be cleaned up by name.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { readdir } from 'node:fs/promises';
import { KubeletError, describeError } from '../../../src/util/errors.ts';
import type { Logger } from '../../../src/util/logger.ts';
import { run } from '../../harness/exec.ts';

/** Every namespace, link, cgroup, directory and process of the multi-node scenario carries it. */
export const NETNS_PREFIX = 'tskrel-mn';
/** Host ↔ node links: 10.213.<i>.0/24 (host .1, node .2). Pod ranges: 10.214.<i>.0/24. */
const LINK_NET = '10.213';
const POD_NET = '10.214';
/** Off the bed's pod subnet (10.88.0.0/16), the bench's (10.89.0.0/16) and the service range (10.0.0.0/24). */
export const NETNS_RANGES = [`${LINK_NET}.0.0/16`, `${POD_NET}.0.0/16`];

export interface NetnsLinkLayout {
  /** Network namespace name, e.g. `tskrel-mn1` (`/run/netns/<netns>`). */
  netns: string;
  /** Host end of the veth pair (host namespace). */
  hostIf: string;
  /** Node end of the veth pair (inside the namespace). */
  nodeIf: string;
  hostAddr: string;
  nodeAddr: string;
  /** The node's CNI range (its own bridge inside its namespace). */
  podSubnet: string;
}

export function linkLayout(index: number): NetnsLinkLayout {
  if (!Number.isInteger(index) || index < 1 || index > 250) {
    throw new KubeletError('InvalidArgument', 'netns link layout', `node index ${index} not in 1..250`);
  }
  const netns = `${NETNS_PREFIX}${index}`;
  return {
    netns,
    hostIf: `${netns}h`,
    nodeIf: `${netns}n`,
    hostAddr: `${LINK_NET}.${index}.1`,
    nodeAddr: `${LINK_NET}.${index}.2`,
    podSubnet: `${POD_NET}.${index}.0/24`,
  };
}

/** `nsenter` argv prefix that runs a program in the namespace's network only (same mounts, cgroups). */
export function inNetns(netns: string): string[] {
  return ['nsenter', `--net=/run/netns/${netns}`, '--'];
}

const ip = (args: readonly string[]) => run('ip', args, { timeoutMs: 15_000 });

/** Runs `ip args`; an answer saying the object is already gone counts as success. */
async function ipIfPresent(args: readonly string[]): Promise<boolean> {
  try {
    await ip(args);
    return true;
  } catch (err) {
    const msg = describeError(err);
    if (/Cannot find device|No such file|does not exist|Invalid "netns" value/i.test(msg)) return false;
    throw err;
  }
}

/** Routes of the host namespace that overlap our ranges and are not ours: we refuse to start. */
export async function conflictingRoutes(): Promise<string[]> {
  const { stdout } = await ip(['-4', 'route', 'show']);
  return stdout
    .split('\n')
    .filter((l) => l.startsWith(`${LINK_NET}.`) || l.startsWith(`${POD_NET}.`))
    .filter((l) => !l.includes(`dev ${NETNS_PREFIX}`));
}

/** The namespace, the veth pair with both addresses, both ends and the namespace's loopback up. */
export async function createLink(l: NetnsLinkLayout): Promise<void> {
  await ip(['netns', 'add', l.netns]);
  await ip(['link', 'add', l.hostIf, 'type', 'veth', 'peer', 'name', l.nodeIf, 'netns', l.netns]);
  await ip(['addr', 'add', `${l.hostAddr}/24`, 'dev', l.hostIf]);
  await ip(['link', 'set', l.hostIf, 'up']);
  await ip(['-n', l.netns, 'addr', 'add', `${l.nodeAddr}/24`, 'dev', l.nodeIf]);
  await ip(['-n', l.netns, 'link', 'set', l.nodeIf, 'up']);
  await ip(['-n', l.netns, 'link', 'set', 'lo', 'up']);
}

/** Removes the veth pair (deleting one end takes the other) and the namespace; missing ones are fine. */
export async function deleteLink(l: NetnsLinkLayout): Promise<void> {
  await ipIfPresent(['link', 'del', l.hostIf]);
  await ipIfPresent(['netns', 'del', l.netns]);
}

/**
 * How a node is cut off. `blackhole`: inside its namespace, packets to and from the host end's
 * address (the API server's, through the forwarder) are dropped silently, as on a real partition:
 * open connections hang and new ones time out. `link-down`: the host end of the veth goes down (the
 * host also drops its route); the node's connects fail at once with EHOSTUNREACH.
 */
export type PartitionMode = 'blackhole' | 'link-down';

const blackholeRules = (l: NetnsLinkLayout) => [
  ['OUTPUT', '-d', `${l.hostAddr}/32`, '-j', 'DROP'],
  ['INPUT', '-s', `${l.hostAddr}/32`, '-j', 'DROP'],
];

const iptables = (l: NetnsLinkLayout, args: readonly string[]) => {
  const [cmd, ...pre] = inNetns(l.netns);
  return run(cmd ?? 'nsenter', [...pre, 'iptables', '-w', '5', ...args], { timeoutMs: 15_000 });
};

export async function partitionLink(l: NetnsLinkLayout, mode: PartitionMode): Promise<void> {
  if (mode === 'link-down') {
    await ip(['link', 'set', l.hostIf, 'down']);
    return;
  }
  for (const [chain, ...rule] of blackholeRules(l)) await iptables(l, ['-I', chain ?? '', ...rule]);
}

export async function healLink(l: NetnsLinkLayout, mode: PartitionMode): Promise<void> {
  if (mode === 'link-down') {
    await ip(['link', 'set', l.hostIf, 'up']);
    return;
  }
  for (const [chain, ...rule] of blackholeRules(l)) await iptables(l, ['-D', chain ?? '', ...rule]);
}

/** Network namespaces (names under /run/netns) whose name starts with our prefix. */
export async function ourNetns(): Promise<string[]> {
  return (await allNetns()).filter((n) => n.startsWith(NETNS_PREFIX));
}

/** Every name under /run/netns (ours, the CNI sandboxes' `cni-…`, anyone's). */
export async function allNetns(): Promise<string[]> {
  return readdir('/run/netns').catch((err: unknown) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  });
}

/** Links of the host namespace whose name starts with our prefix. */
export async function ourLinks(): Promise<string[]> {
  const { stdout } = await ip(['-o', 'link', 'show']);
  return stdout
    .split('\n')
    .map((line) => /^\d+:\s+([^:@\s]+)/.exec(line)?.[1] ?? '')
    .filter((n) => n.startsWith(NETNS_PREFIX));
}

/**
 * A TCP forwarder in the host namespace: accepts on `listen` and pipes each connection to `target`.
 * Both sides are torn down together; `stop()` closes the listener and every open connection.
 */
export interface TcpForwarder {
  readonly listen: string;
  /** Connections accepted so far. */
  accepted(): number;
  stop(): Promise<void>;
}

export async function startForwarder(
  listen: { host: string; port: number },
  target: { host: string; port: number },
  logger: Logger,
): Promise<TcpForwarder> {
  const open = new Set<Socket>();
  let count = 0;
  const server: Server = createServer((down) => {
    count++;
    const up = createConnection({ host: target.host, port: target.port });
    open.add(down);
    open.add(up);
    const close = (why: string, err?: Error) => {
      if (err) logger.debug('forwarded connection closed', { listen: listen.host, why, err: err.message });
      down.destroy();
      up.destroy();
      open.delete(down);
      open.delete(up);
    };
    down.on('error', (err) => close('client side', err));
    up.on('error', (err) => close('server side', err));
    down.on('close', () => close('client closed'));
    up.on('close', () => close('server closed'));
    down.pipe(up);
    up.pipe(down);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => logger.warn('forwarder error', { listen: listen.host, err: err.message }));
  let stopped: Promise<void> | undefined;
  return {
    listen: `${listen.host}:${listen.port}`,
    accepted: () => count,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of open) s.destroy();
        open.clear();
      });
      return stopped;
    },
  };
}
