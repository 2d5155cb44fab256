/**
 * The gRPC protos the kubelet speaks (CRI's api.proto, containerd's events, grpc.health.v1 for
 * probes), parsed at run time by @grpc/proto-loader where upstream links generated Go code. Each
 * package is parsed once per process, on first use; in-process fakes in tests serve the same
 * definition.
 */
import path from 'node:path';
import { loadSync, type MethodDefinition, type Options, type PackageDefinition } from '@grpc/proto-loader';
import { KubeletError } from './errors.ts';

export interface ProtoPackage {
  /** The parsed package definition. */
  definition(): PackageDefinition;
  /** `service`'s method `name` (service fully qualified); an Internal error if the protos lack it. */
  method(service: string, name: string): MethodDefinition<object, object>;
}

export function protoPackage(files: readonly string[], options: Options): ProtoPackage {
  let def: PackageDefinition | undefined;
  const definition = (): PackageDefinition => (def ??= loadSync([...files], options));
  return {
    definition,
    method(service, name) {
      const svc = definition()[service];
      // Message and enum definitions carry a `format`; services are plain maps of methods.
      const method = svc && !('format' in svc) ? svc[name] : undefined;
      if (!method) {
        const from = files.map((f) => path.basename(f)).join(', ');
        throw new KubeletError('Internal', `gRPC ${service}/${name}`, `the method is missing from ${from}`);
      }
      return method;
    },
  };
}
