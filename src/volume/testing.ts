import type { ConfigMap, Secret, VolumeObjectSource } from './objects.ts';

/** An in-memory VolumeObjectSource for tests: objects by `namespace/name`, with a call log. */
export interface FakeObjectSource extends VolumeObjectSource {
  secrets: Map<string, Secret>;
  configMaps: Map<string, ConfigMap>;
  calls: string[];
  /** When set, every read rejects with it (an API outage). */
  failWith?: Error;
  /** When true, reads never settle and ignore their signal (a hung API). */
  hang?: boolean;
}

export const b64 = (s: string) => Buffer.from(s).toString('base64');

export function fakeObjectSource(): FakeObjectSource {
  const src: FakeObjectSource = {
    secrets: new Map(),
    configMaps: new Map(),
    calls: [],
    getSecret(namespace, name) {
      src.calls.push(`secret ${namespace}/${name}`);
      if (src.hang) return new Promise<never>(() => {});
      if (src.failWith) return Promise.reject(src.failWith);
      return Promise.resolve(src.secrets.get(`${namespace}/${name}`));
    },
    getConfigMap(namespace, name) {
      src.calls.push(`configMap ${namespace}/${name}`);
      if (src.hang) return new Promise<never>(() => {});
      if (src.failWith) return Promise.reject(src.failWith);
      return Promise.resolve(src.configMaps.get(`${namespace}/${name}`));
    },
  };
  return src;
}
