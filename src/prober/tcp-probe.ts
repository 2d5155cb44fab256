import { connect } from 'node:net';
import { abortReason } from '../util/abort.ts';
import { describeError } from '../util/errors.ts';
import { failure, success, type ProbeOutcome } from './outcome.ts';
import { joinHostPort } from './port.ts';

function describeDialError(err: unknown, addr: string, timedOut: boolean): string {
  if (timedOut) return `dial tcp ${addr}: i/o timeout`;
  const code = (err as { code?: unknown }).code;
  if (code === 'ECONNREFUSED') return `dial tcp ${addr}: connect: connection refused`;
  if (code === 'EHOSTUNREACH') return `dial tcp ${addr}: connect: no route to host`;
  if (code === 'ENETUNREACH') return `dial tcp ${addr}: connect: network is unreachable`;
  return `dial tcp ${addr}: ${describeError(err)}`;
}

/**
 * A TCP probe (upstream probe/tcp): a connection opened within the timeout is success (and closed
 * at once); anything else is a failure. Only the parent `signal` aborting throws.
 */
export function tcpProbe(
  host: string,
  port: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<ProbeOutcome> {
  const addr = joinHostPort(host, port);
  return new Promise<ProbeOutcome>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const socket = connect({ host, port });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy(new Error('i/o timeout'));
    }, timeoutMs);
    const onAbort = () => socket.destroy(abortReason(signal));
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    socket.once('connect', () => {
      done();
      socket.destroy();
      resolve(success());
    });
    socket.once('error', (err) => {
      done();
      if (signal?.aborted) reject(abortReason(signal));
      else resolve(failure(describeDialError(err, addr, timedOut)));
    });
  });
}
