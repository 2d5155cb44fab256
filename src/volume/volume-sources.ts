import type { Volume } from '../api/types.ts';
import { KubeletError } from '../util/errors.ts';
import { DEFAULT_SA_TOKEN_EXPIRATION_SECONDS, DEFAULT_VOLUME_FILE_MODE } from '../config/defaults.ts';

/**
 * Typed views of the core/v1 volume sources whose files the kubelet writes itself (secret,
 * configMap, downwardAPI, projected). `Volume` keeps these as `unknown` (manifests are carried
 * untouched), so each is checked here once, with an error naming the field, before anything is used.
 */

export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

export interface SecretVolumeSource {
  secretName: string;
  items?: KeyToPath[];
  defaultMode: number;
  optional: boolean;
}

export interface ConfigMapVolumeSource {
  name: string;
  items?: KeyToPath[];
  defaultMode: number;
  optional: boolean;
}

export interface ObjectFieldSelector {
  apiVersion?: string;
  fieldPath: string;
}

export interface ResourceFieldSelector {
  containerName?: string;
  resource: string;
  divisor?: string;
}

export interface DownwardAPIVolumeFile {
  path: string;
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: ResourceFieldSelector;
  mode?: number;
}

export interface DownwardAPIVolumeSource {
  items: DownwardAPIVolumeFile[];
  defaultMode: number;
}

export type VolumeProjection =
  | { kind: 'secret'; name: string; items?: KeyToPath[]; optional: boolean }
  | { kind: 'configMap'; name: string; items?: KeyToPath[]; optional: boolean }
  | { kind: 'downwardAPI'; items: DownwardAPIVolumeFile[] }
  | ServiceAccountTokenProjection
  | { kind: 'unsupported'; source: string };

/** `projected.sources[].serviceAccountToken`: a TokenRequest token written at `path`. */
export interface ServiceAccountTokenProjection {
  kind: 'serviceAccountToken';
  /** '' asks for the API server's default audiences. */
  audience: string;
  expirationSeconds: number;
  path: string;
}

/** Upstream validation of serviceAccountToken.expirationSeconds (validateProjectionSources). */
const MIN_TOKEN_EXPIRATION_SECONDS = 10 * 60;
const MAX_TOKEN_EXPIRATION_SECONDS = 2 ** 32;

export interface ProjectedVolumeSource {
  sources: VolumeProjection[];
  defaultMode: number;
}

type Obj = Record<string, unknown>;

class FieldChecker {
  readonly volume: string;
  constructor(volume: string) {
    this.volume = volume;
  }
  fail(path: string, why: string): never {
    throw new KubeletError('InvalidArgument', `mount volume ${this.volume}`, `${path}: ${why}`);
  }
  obj(v: unknown, path: string): Obj {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) this.fail(path, 'must be an object');
    return v as Obj;
  }
  str(o: Obj, key: string, path: string): string {
    const v = o[key];
    if (typeof v !== 'string' || v === '') this.fail(`${path}.${key}`, 'required string');
    return v;
  }
  optStr(o: Obj, key: string, path: string): string | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') this.fail(`${path}.${key}`, 'must be a string');
    return v;
  }
  optBool(o: Obj, key: string, path: string): boolean {
    const v = o[key];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') this.fail(`${path}.${key}`, 'must be a boolean');
    return v;
  }
  /** File modes must be 0..0777 (upstream validation). */
  optMode(o: Obj, key: string, path: string): number | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0o777) {
      this.fail(
        `${path}.${key}`,
        `must be a number between 0 and 0777 (octal), both inclusive; got ${JSON.stringify(v)}`,
      );
    }
    return v;
  }
  optInt(o: Obj, key: string, path: string): number | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v)) this.fail(`${path}.${key}`, 'must be an integer');
    return v;
  }
  list(o: Obj, key: string, path: string): unknown[] | undefined {
    const v = o[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) this.fail(`${path}.${key}`, 'must be a list');
    return v as unknown[];
  }
  items(o: Obj, path: string): KeyToPath[] | undefined {
    const list = this.list(o, 'items', path);
    if (!list || list.length === 0) return undefined;
    return list.map((raw, i) => {
      const p = `${path}.items[${i}]`;
      const it = this.obj(raw, p);
      const mode = this.optMode(it, 'mode', p);
      return {
        key: this.str(it, 'key', p),
        path: this.str(it, 'path', p),
        ...(mode !== undefined && { mode }),
      };
    });
  }
  downwardItems(o: Obj, path: string): DownwardAPIVolumeFile[] {
    return (this.list(o, 'items', path) ?? []).map((raw, i) => {
      const p = `${path}.items[${i}]`;
      const it = this.obj(raw, p);
      const file: DownwardAPIVolumeFile = { path: this.str(it, 'path', p) };
      const mode = this.optMode(it, 'mode', p);
      if (mode !== undefined) file.mode = mode;
      if (it.fieldRef !== undefined && it.fieldRef !== null) {
        const f = this.obj(it.fieldRef, `${p}.fieldRef`);
        file.fieldRef = { fieldPath: this.str(f, 'fieldPath', `${p}.fieldRef`) };
        const apiVersion = this.optStr(f, 'apiVersion', `${p}.fieldRef`);
        if (apiVersion !== undefined) file.fieldRef.apiVersion = apiVersion;
      }
      if (it.resourceFieldRef !== undefined && it.resourceFieldRef !== null) {
        const rp = `${p}.resourceFieldRef`;
        const r = this.obj(it.resourceFieldRef, rp);
        file.resourceFieldRef = { resource: this.str(r, 'resource', rp) };
        const containerName = this.optStr(r, 'containerName', rp);
        if (containerName) file.resourceFieldRef.containerName = containerName;
        const divisor = r.divisor;
        if (typeof divisor === 'string' || typeof divisor === 'number')
          file.resourceFieldRef.divisor = String(divisor);
        else if (divisor !== undefined && divisor !== null) this.fail(`${rp}.divisor`, 'must be a quantity');
      }
      if ((file.fieldRef === undefined) === (file.resourceFieldRef === undefined)) {
        this.fail(p, 'must specify exactly one of fieldRef and resourceFieldRef');
      }
      return file;
    });
  }
}

export function secretSource(v: Volume): SecretVolumeSource {
  const c = new FieldChecker(v.name);
  const o = c.obj(v.secret, 'secret');
  const items = c.items(o, 'secret');
  return {
    secretName: c.str(o, 'secretName', 'secret'),
    ...(items && { items }),
    defaultMode: c.optMode(o, 'defaultMode', 'secret') ?? DEFAULT_VOLUME_FILE_MODE,
    optional: c.optBool(o, 'optional', 'secret'),
  };
}

export function configMapSource(v: Volume): ConfigMapVolumeSource {
  const c = new FieldChecker(v.name);
  const o = c.obj(v.configMap, 'configMap');
  const items = c.items(o, 'configMap');
  return {
    name: c.str(o, 'name', 'configMap'),
    ...(items && { items }),
    defaultMode: c.optMode(o, 'defaultMode', 'configMap') ?? DEFAULT_VOLUME_FILE_MODE,
    optional: c.optBool(o, 'optional', 'configMap'),
  };
}

export function downwardAPISource(v: Volume): DownwardAPIVolumeSource {
  const c = new FieldChecker(v.name);
  const o = c.obj(v.downwardAPI, 'downwardAPI');
  return {
    items: c.downwardItems(o, 'downwardAPI'),
    defaultMode: c.optMode(o, 'defaultMode', 'downwardAPI') ?? DEFAULT_VOLUME_FILE_MODE,
  };
}

export function projectedSource(v: Volume): ProjectedVolumeSource {
  const c = new FieldChecker(v.name);
  const o = c.obj(v.projected, 'projected');
  const sources = (c.list(o, 'sources', 'projected') ?? []).map((raw, i): VolumeProjection => {
    const p = `projected.sources[${i}]`;
    const s = c.obj(raw, p);
    const kinds = Object.keys(s).filter((k) => s[k] !== undefined && s[k] !== null);
    if (kinds.length !== 1) c.fail(p, 'must specify exactly one source');
    const kind = kinds[0] ?? '';
    const so = c.obj(s[kind], `${p}.${kind}`);
    switch (kind) {
      case 'secret':
      case 'configMap': {
        const items = c.items(so, `${p}.${kind}`);
        return {
          kind,
          name: c.str(so, 'name', `${p}.${kind}`),
          ...(items && { items }),
          optional: c.optBool(so, 'optional', `${p}.${kind}`),
        };
      }
      case 'downwardAPI':
        return { kind, items: c.downwardItems(so, `${p}.downwardAPI`) };
      case 'serviceAccountToken': {
        const tp = `${p}.serviceAccountToken`;
        const exp = c.optInt(so, 'expirationSeconds', tp) ?? DEFAULT_SA_TOKEN_EXPIRATION_SECONDS;
        if (exp < MIN_TOKEN_EXPIRATION_SECONDS) {
          c.fail(`${tp}.expirationSeconds`, 'may not specify a duration less than 10 minutes');
        }
        if (exp > MAX_TOKEN_EXPIRATION_SECONDS) {
          c.fail(`${tp}.expirationSeconds`, 'may not specify a duration larger than 2^32 seconds');
        }
        return {
          kind,
          audience: c.optStr(so, 'audience', tp) ?? '',
          expirationSeconds: exp,
          path: c.str(so, 'path', tp),
        };
      }
      default:
        return { kind: 'unsupported', source: kind };
    }
  });
  return { sources, defaultMode: c.optMode(o, 'defaultMode', 'projected') ?? DEFAULT_VOLUME_FILE_MODE };
}
