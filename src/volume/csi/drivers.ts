/**
 * The CSI drivers registered on this node, by name, with their endpoint and highest supported CSI
 * version (upstream pkg/volume/csi csi_drivers_store.go, and csi_plugin.go highestSupportedVersion).
 */
import { KubeletError } from '../../util/errors.ts';

export interface Version {
  major: number;
  minor: number;
  patch: number;
  text: string;
}

export interface RegisteredDriver {
  name: string;
  endpoint: string;
  highestSupportedVersion: Version;
}

/**
 * A version as upstream's utilversion.ParseGeneric reads it: an optional `v`, at least two dotted
 * numbers; anything after the numbers is ignored. Undefined when it is not one.
 */
export function parseGenericVersion(s: string): Version | undefined {
  const m = /^\s*v?([0-9]+(?:\.[0-9]+)+)/.exec(s);
  if (!m?.[1]) return undefined;
  const [major = 0, minor = 0, patch = 0] = m[1].split('.').map(Number);
  return { major, minor, patch, text: m[1] };
}

export function versionLess(a: Version, b: Version): boolean {
  if (a.major !== b.major) return a.major < b.major;
  if (a.minor !== b.minor) return a.minor < b.minor;
  return a.patch < b.patch;
}

/**
 * Upstream highestSupportedVersion: the highest 1.x of `versions` (2.x and above are skipped as not
 * backward compatible; 0.x is no longer supported since Kubernetes 1.17).
 */
export function highestSupportedVersion(versions: readonly string[]): Version {
  const op = 'CSI driver versions';
  if (versions.length === 0)
    throw new KubeletError('InvalidArgument', op, 'CSI driver reporting empty array for supported versions');
  let best: Version | undefined;
  let unparsable: string | undefined;
  for (const s of versions) {
    const v = parseGenericVersion(s);
    if (!v) {
      unparsable = s;
      continue;
    }
    if (v.major > 1) continue;
    if (!best || versionLess(best, v)) best = v;
  }
  if (!best)
    throw new KubeletError(
      'InvalidArgument',
      op,
      `could not find a highest supported version from versions (${JSON.stringify(versions)}) reported by this driver${unparsable !== undefined ? `: could not parse ${JSON.stringify(unparsable)}` : ''}`,
    );
  if (best.major !== 1)
    throw new KubeletError(
      'InvalidArgument',
      op,
      `highest supported version reported by driver is ${best.text}, must be v1.x`,
    );
  return best;
}

/** The registered drivers (upstream DriversStore). */
export interface DriverStore {
  get(name: string): RegisteredDriver | undefined;
  set(driver: RegisteredDriver): void;
  delete(name: string): void;
  list(): RegisteredDriver[];
}

export function createDriverStore(): DriverStore {
  const drivers = new Map<string, RegisteredDriver>();
  return {
    get: (name) => drivers.get(name),
    set: (d) => void drivers.set(d.name, d),
    delete: (name) => void drivers.delete(name),
    list: () => [...drivers.values()],
  };
}
