/**
 * `--console-address HOST:PORT` (tskubelet only): where the node console is also served over plain
 * HTTP without authentication. Only a loopback address is accepted — anything reachable from
 * another machine would hand the node's pods and logs to whoever connects.
 */
import { isIP } from 'node:net';
import type { Check } from './validate.ts';

export interface ConsoleAddress {
  /** A loopback IP literal (`localhost` is resolved to 127.0.0.1). */
  readonly host: string;
  /** 0: any free port (logged when bound). */
  readonly port: number;
}

/** Whether `ip` is an IPv4 address in 127.0.0.0/8 or the IPv6 loopback. */
export function isLoopbackIP(ip: string): boolean {
  if (isIP(ip) === 4) return ip.split('.')[0] === '127';
  if (isIP(ip) === 6) return ip === '::1' || /^(0{1,4}:){7}0{0,3}1$/.test(ip) || ip === '0:0:0:0:0:0:0:1';
  return false;
}

/** `HOST:PORT` or `[V6]:PORT` parsed, or the problem with it. */
export function parseConsoleAddress(
  text: string,
): { ok: true; address: ConsoleAddress } | { ok: false; problem: string } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  if (!m) return { ok: false, problem: 'must be HOST:PORT, e.g. 127.0.0.1:10255 or [::1]:10255' };
  const rawHost = m[1] ?? m[2] ?? '';
  const port = Number(m[3]);
  if (port > 65535) return { ok: false, problem: `port ${port} is out of range (0-65535)` };
  const host = rawHost === 'localhost' ? '127.0.0.1' : rawHost;
  if (!isLoopbackIP(host)) {
    return {
      ok: false,
      problem:
        `its host ${rawHost} is not a loopback address: the console is served there without ` +
        'authentication, so only 127.0.0.0/8, ::1 or localhost are accepted (remote users open ' +
        '/console/ on the kubelet API port, with its authentication)',
    };
  }
  return { ok: true, address: { host, port } };
}

export const checkConsoleAddress: Check<string> = (c, errors) => {
  if (c.value === '') return;
  const r = parseConsoleAddress(c.value);
  if (!r.ok) errors.push(`${c.label}: ${JSON.stringify(c.value)}: ${r.problem}`);
};
