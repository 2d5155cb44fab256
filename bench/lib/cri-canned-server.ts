/**
 * A CRI runtime that answers every call with a response encoded once at start (bench/lib/
 * cri-fixtures.ts), so nearly all the CPU of a call is the client's. Run as its own process:
 *
 *   node bench/lib/cri-canned-server.ts SOCKET PODS
 *
 * prints `ready` on stdout once listening; exits on SIGTERM. Requests are not decoded.
 */
import {
  Metadata,
  Server,
  ServerCredentials,
  status,
  type sendUnaryData,
  type ServiceDefinition,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import { criPackageDefinition } from '../../src/runtime/cri/h2-invoker.ts';
import { cannedResponses } from './cri-fixtures.ts';

const [socket, podsArg] = process.argv.slice(2);
if (!socket) throw new Error('usage: cri-canned-server.ts SOCKET [PODS]');
const canned = cannedResponses(Number(podsArg ?? 110));
const def = criPackageDefinition();
const server = new Server({ 'grpc.max_send_message_length': 16 << 20 });
const identity = (b: Buffer): Buffer => b;

for (const service of ['RuntimeService', 'ImageService']) {
  const svc = def[`runtime.v1.${service}`] as ServiceDefinition;
  const raw: Record<string, MethodDefinition<Buffer, Buffer>> = {};
  const impl: UntypedServiceImplementation = {};
  for (const [name, m] of Object.entries(svc) as [string, MethodDefinition<object, object>][]) {
    raw[name] = {
      ...m,
      requestDeserialize: identity,
      responseSerialize: identity,
    } as unknown as MethodDefinition<Buffer, Buffer>;
    const body = canned[name];
    const bytes = body ? m.responseSerialize(body) : undefined;
    impl[name] = (_call: unknown, cb: sendUnaryData<Buffer>) => {
      if (bytes) cb(null, bytes);
      else cb({ code: status.UNIMPLEMENTED, details: `${name} not canned`, metadata: new Metadata() });
    };
  }
  server.addService(raw, impl);
}

server.bindAsync(`unix://${socket}`, ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  process.stdout.write('ready\n');
});
process.on('SIGTERM', () => {
  server.forceShutdown();
  process.exit(0);
});
