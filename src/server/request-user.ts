/**
 * Who made a request, as the listener that admitted it found (upstream: request.WithUser on the
 * request's context, read back with request.UserFrom). Set by every listener before a handler runs:
 * the kubelet API after authentication, the local socket (its root user), the console listener
 * (anonymous); read by handlers that count per user (the console's stream slots).
 */
import type { IncomingMessage } from 'node:http';
import type { UserInfo } from './auth/authenticator.ts';

const users = new WeakMap<IncomingMessage, UserInfo>();

export function setRequestUser(req: IncomingMessage, user: UserInfo): void {
  users.set(req, user);
}

/** The request's user; undefined for a request no listener admitted. */
export function requestUser(req: IncomingMessage): UserInfo | undefined {
  return users.get(req);
}
