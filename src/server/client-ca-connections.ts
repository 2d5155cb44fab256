/**
 * The kubelet API's connections across a client CA reload (auth/client-ca.ts). Upstream verifies a
 * client certificate on every request against the bundle in force (the x509 authenticator's
 * dynamic verify options, apiserver pkg/authentication/request/x509); Node verifies it once, in
 * the TLS handshake, against the context the connection was accepted with. So when the bundle
 * changes, the new one is put in force for new connections, idle connections are closed, and a
 * connection accepted before the change that presented a client certificate is closed when it
 * sends its next request, without an answer (Go's client retries an idempotent request on a new
 * connection): no request is authenticated by a verification the new bundle would not make.
 */
import type { IncomingMessage } from 'node:http';
import type { Server } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { ClientCA } from './auth/client-ca.ts';

export interface ClientCAConnections {
  /** Whether the request's connection presented a certificate verified against an older bundle. */
  isStale(req: IncomingMessage): boolean;
}

/** A live TCP connection's key: its peer's address and port (what the raw and TLS sockets share). */
function keyOf(socket: Pick<Socket, 'remoteAddress' | 'remotePort'>): string | undefined {
  if (socket.remoteAddress === undefined || socket.remotePort === undefined) return undefined;
  return `${socket.remoteAddress}|${socket.remotePort}`;
}

export function trackClientCAConnections(
  server: Server,
  clientCA: Pick<ClientCA, 'onChange'>,
  setContext: (ca: Buffer) => void,
): ClientCAConnections {
  let generation = 0;
  /** Each open connection, by key: the bundle generation it was accepted under. */
  const accepted = new Map<string, { socket: Socket; generation: number }>();
  // 'connection' comes before the handshake, which uses the context in force at this moment.
  server.on('connection', (socket: Socket) => {
    const key = keyOf(socket);
    if (key === undefined) return;
    accepted.set(key, { socket, generation });
    socket.once('close', () => {
      if (accepted.get(key)?.socket === socket) accepted.delete(key);
    });
  });
  clientCA.onChange((ca) => {
    generation++;
    setContext(ca);
    server.closeIdleConnections();
  });
  return {
    isStale(req) {
      const key = keyOf(req.socket);
      const at = key === undefined ? undefined : accepted.get(key);
      if (!at || at.generation === generation) return false;
      const socket = req.socket as Partial<TLSSocket>;
      const cert = typeof socket.getPeerCertificate === 'function' ? socket.getPeerCertificate() : undefined;
      return cert !== undefined && cert !== null && Object.keys(cert).length > 0;
    },
  };
}
