/**
 * A fake containerd event service for tests (not exported from index.ts, not part of the build): a
 * real gRPC server on a unix socket serving the same events.proto.
 */
import {
  Server,
  ServerCredentials,
  status as GrpcStatus,
  type sendUnaryData,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
} from '@grpc/grpc-js';
import { eventsPackageDefinition } from './stream.ts';

type Req = Record<string, unknown>;

/** A task exit envelope as containerd sends it (`id` ≠ `containerId` for an exec process). */
export const exitEnvelope = (containerId: string, id = containerId, namespace = 'k8s.io') => ({
  namespace,
  topic: '/tasks/exit',
  event: {
    '@type': 'types.containerd.io/containerd.events.TaskExit',
    containerId,
    id,
    exitStatus: 3,
    pid: 7,
  },
});

/**
 * A fake containerd event service on a unix socket, serving the same events.proto: Publish
 * broadcasts to every subscriber as containerd's exchange does (namespace from the request header);
 * `echoMarker: false` makes it drop published events, as a runtime that refuses them.
 */
export class FakeEventService {
  subscribers = new Set<ServerWritableStream<Req, object>>();
  filters: string[][] = [];
  subscribes = 0;
  echoMarker = true;
  /** Set: Publish fails with this gRPC code (a runtime that refuses published events). */
  refusePublish: number | undefined;
  /** While true, every Subscribe fails at once with UNAVAILABLE (a runtime coming back up). */
  refuse = false;
  private server = new Server();
  readonly socket: string;
  constructor(socket: string) {
    this.socket = socket;
  }

  async start(): Promise<void> {
    const svc = eventsPackageDefinition()['containerd.services.events.v1.Events'] as ServiceDefinition;
    this.server.addService(svc, {
      Subscribe: (call: ServerWritableStream<Req, object>) => {
        this.subscribes++;
        if (this.refuse) {
          call.emit('error', { code: GrpcStatus.UNAVAILABLE, details: 'starting up' });
          return;
        }
        this.filters.push(call.request.filters as string[]);
        this.subscribers.add(call);
        call.on('cancelled', () => this.subscribers.delete(call));
      },
      Publish: (call: ServerUnaryCall<Req, object>, cb: sendUnaryData<object>) => {
        if (this.refusePublish !== undefined) {
          cb({ code: this.refusePublish, details: 'refused' });
          return;
        }
        const ns = call.metadata.get('containerd-namespace')[0];
        if (this.echoMarker) {
          this.send({ namespace: String(ns), topic: call.request.topic, event: call.request.event });
        }
        cb(null, {});
      },
    });
    await new Promise<void>((resolve, reject) =>
      this.server.bindAsync(`unix://${this.socket}`, ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  }

  send(envelope: object): void {
    for (const s of this.subscribers)
      s.write({ timestamp: { seconds: 1_700_000_000, nanos: 5e8 }, ...envelope });
  }

  /** Ends every subscription with UNAVAILABLE, as a containerd shutting down does. */
  breakAll(): void {
    for (const s of this.subscribers)
      s.emit('error', { code: GrpcStatus.UNAVAILABLE, details: 'shutting down' });
    this.subscribers.clear();
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.tryShutdown(() => resolve()));
  }
}
