import { networkInterfaces } from 'node:os';

/**
 * The node's primary IP when --node-ip is not given: the first non-internal IPv4 address of an
 * interface that is not a container bridge/veth (upstream falls back to the default-route interface).
 */
export function detectNodeIP(): string | undefined {
  const ifaces = networkInterfaces();
  const skip = /^(cni|veth|docker|br-|flannel|cali|virbr|tskb)/;
  for (const [name, addrs] of Object.entries(ifaces)) {
    if (skip.test(name)) continue;
    for (const a of addrs ?? []) {
      if (a.family === 'IPv4' && !a.internal) return a.address;
    }
  }
  return undefined;
}
