import type { Container } from '../api/types.ts';
import { KubeletError } from '../util/errors.ts';

/**
 * A probe's `port`: a number, or the name of one of the container's ports, or (as upstream's last
 * resort) a number written as a string. Throws when it resolves to nothing in 1..65535.
 */
export function resolveContainerPort(port: number | string, container: Container): number {
  let n: number;
  if (typeof port === 'number') {
    n = port;
  } else {
    const named = container.ports?.find((p) => p.name === port);
    if (named) {
      n = named.containerPort;
    } else if (/^[+-]?\d+$/.test(port)) {
      n = Number(port);
    } else {
      throw new KubeletError('InvalidArgument', 'resolve probe port', `port ${port} not found`);
    }
  }
  if (!Number.isInteger(n) || n <= 0 || n >= 65536) {
    throw new KubeletError('InvalidArgument', 'resolve probe port', `invalid port number: ${n}`);
  }
  return n;
}

/** `host:port`, with brackets around an IPv6 literal (Go's net.JoinHostPort). */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
