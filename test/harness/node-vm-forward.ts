/**
 * Run INSIDE the node VM (with the checkout's node, over the share): listens on the guest's
 * 127.0.0.1:<port> for each port given and pipes every connection to <host>:<port>. Image
 * references like `127.0.0.1:5000/…` then mean the host's registries in the guest too, pull
 * secrets included, with nothing rewritten (QEMU's user networking shows the host's loopback as
 * 10.0.2.2). Usage: node node-vm-forward.ts HOST PORT...
 */
import { connect, createServer } from 'node:net';

const [host, ...ports] = process.argv.slice(2);
if (host === undefined || ports.length === 0) {
  process.stderr.write('usage: node node-vm-forward.ts HOST PORT...\n');
  process.exit(2);
}
for (const port of ports.map(Number)) {
  createServer((inbound) => {
    const outbound = connect(port, host);
    inbound.pipe(outbound).pipe(inbound);
    // Either side failing ends both: the client sees its connection drop, as it would unforwarded.
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', (err) => {
      process.stderr.write(`forward 127.0.0.1:${port} -> ${host}:${port}: ${err.message}\n`);
      inbound.destroy();
    });
  })
    .on('error', (err) => {
      process.stderr.write(`listen 127.0.0.1:${port}: ${err.message}\n`);
      process.exit(1);
    })
    .listen(port, '127.0.0.1', () =>
      process.stdout.write(`forwarding 127.0.0.1:${port} -> ${host}:${port}\n`),
    );
}
