/**
 * The Host header check of the unauthenticated loopback listeners (healthz, console): no upstream
 * counterpart (upstream's healthz server takes any Host). A browser sends the name it resolved, so
 * a page whose own name resolves to 127.0.0.1 (DNS rebinding) arrives with a Host that is not a
 * loopback name and is refused; local tools send `localhost` or the address.
 */

/** Host header values for a loopback address: localhost, 127.0.0.0/8, [::1], any port, any case. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const h = host.toLowerCase();
  const name = h.startsWith('[') ? h.slice(1, h.indexOf(']')) : h.replace(/:\d+$/, '');
  return name === 'localhost' || name === '::1' || /^127(\.\d{1,3}){3}$/.test(name);
}
