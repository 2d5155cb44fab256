/**
 * Local network helpers for the suites that start listeners (a kubelet's API, a registry, a
 * console): a port free on 127.0.0.1 right now. No upstream counterpart.
 */
import { createServer, type AddressInfo } from 'node:net';

/** A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick; another process may take it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
