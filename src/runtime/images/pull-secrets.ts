/**
 * imagePullSecrets → registry credentials (upstream pkg/credentialprovider: secrets.go, keyring.go,
 * config.go). A pod's `kubernetes.io/dockerconfigjson` and `kubernetes.io/dockercfg` secrets become a
 * keyring; looking an image up in it yields every credential whose registry location matches, most
 * specific location first, and the image manager tries them in that order.
 */
import type { AuthConfig } from '../cri/index.ts';
import { KubeletError } from '../../util/errors.ts';

/** v1.SecretTypeDockerConfigJson and its data key v1.DockerConfigJsonKey. */
export const SECRET_TYPE_DOCKER_CONFIG_JSON = 'kubernetes.io/dockerconfigjson';
export const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';
/** v1.SecretTypeDockercfg (the legacy ~/.dockercfg format) and its data key v1.DockerConfigKey. */
export const SECRET_TYPE_DOCKERCFG = 'kubernetes.io/dockercfg';
export const DOCKERCFG_KEY = '.dockercfg';

/** Where Docker Hub credentials are filed (upstream defaultRegistryHost). */
const DEFAULT_REGISTRY_HOST = 'index.docker.io';

/**
 * The Secret fields a pull secret is read from, in wire shape: `data` values are base64. A Secret
 * from the API (or src/volume's `Secret`) fits as is.
 */
export interface PullSecret {
  metadata?: { name?: string; namespace?: string };
  type?: string;
  data?: Record<string, string>;
}

/** One credential for one registry location. */
export interface RegistryCredential {
  username: string;
  password: string;
  /** docker config `identitytoken` (an OAuth refresh token); see `toAuthConfig`. */
  identityToken?: string;
  /** docker config `registrytoken` (a bearer token). */
  registryToken?: string;
  /**
   * Where it came from, for logs, never the credential itself: the secret (`namespace/name`) or
   * the node's docker config file (its path).
   */
  source: string;
}

/** Credentials for images, by registry location (upstream DockerKeyring). */
export interface Keyring {
  /**
   * Every credential whose location matches `repository` (a normalized repository name such as
   * `docker.io/library/busybox` or `127.0.0.1:5000/team/app`, no tag or digest), in the order they
   * should be tried; empty when none does (the pull then goes without credentials).
   */
  lookup(repository: string): RegistryCredential[];
  /** Number of distinct locations known (for logs). */
  size(): number;
}

/** A docker config entry as upstream's DockerConfigEntry decodes it (plus the token fields). */
interface ConfigEntry {
  username: string;
  password: string;
  identityToken?: string;
  registryToken?: string;
}

function secretName(s: PullSecret): string {
  return `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
}

function parseError(source: string, message: string, cause?: unknown): KubeletError {
  return new KubeletError('InvalidArgument', `read image pull secret ${source}`, message, { cause });
}

/**
 * Decodes the docker config `auth` field, base64(username:password). As upstream: padded input
 * (ends in `=`) must be standard padded base64, anything else unpadded base64.
 */
export function decodeAuthField(field: string): { username: string; password: string } {
  // Go's base64 decoder skips CR and LF; nothing else outside the alphabet is tolerated.
  const text = field.replace(/[\r\n]/g, '');
  const padded = text.trim().endsWith('=');
  const valid = padded
    ? /^[A-Za-z0-9+/]*={1,2}$/.test(text) && text.length % 4 === 0
    : /^[A-Za-z0-9+/]*$/.test(text) && text.length % 4 !== 1;
  if (!valid) throw new Error('illegal base64 data in auth field');
  const decoded = Buffer.from(text, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon === -1) {
    throw new Error('unable to parse auth field, must be formatted as base64(username:password)');
  }
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * An object field as Go's encoding/json finds it for a struct: key matched case-insensitively, the
 * last matching key in the document winning.
 */
function goField(obj: Record<string, unknown>, name: string): unknown {
  let value: unknown;
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === name) value = v;
  return value;
}

/** One entry, as Go's json.Unmarshal into DockerConfigEntry would read it (type errors included). */
function parseEntry(location: string, raw: unknown): ConfigEntry {
  if (raw === null) return { username: '', password: '' };
  if (!isObject(raw)) throw new Error(`entry ${JSON.stringify(location)} is not an object`);
  const str = (field: string): string => {
    const v = goField(raw, field);
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') throw new Error(`entry ${JSON.stringify(location)}: ${field} is not a string`);
    return v;
  };
  let username = str('username');
  let password = str('password');
  const auth = str('auth');
  if (auth !== '') ({ username, password } = decodeAuthField(auth));
  const entry: ConfigEntry = { username, password };
  const identityToken = str('identitytoken');
  const registryToken = str('registrytoken');
  if (identityToken !== '') entry.identityToken = identityToken;
  if (registryToken !== '') entry.registryToken = registryToken;
  return entry;
}

/** A docker config map `{location: entry}` (the `auths` of config.json, or a whole .dockercfg). */
function parseConfigMap(raw: unknown): [string, ConfigEntry][] {
  if (raw === undefined || raw === null) return [];
  if (!isObject(raw)) throw new Error('registry map is not an object');
  return Object.entries(raw).map(([loc, e]) => [loc, parseEntry(loc, e)]);
}

function decodeJSON(source: string, key: string, b64: string): unknown {
  const text = Buffer.from(b64, 'base64').toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw parseError(source, `${key} is not valid JSON: ${(err as Error).message}`, err);
  }
}

/**
 * The credentials in one secret, in the order they appear, or undefined when the secret is not a
 * docker config secret (wrong type, or its key missing or empty): upstream skips those silently.
 * Throws a KubeletError (InvalidArgument) when a docker config secret does not parse; upstream fails
 * the whole pull in that case, and so does the image manager.
 */
export function parseDockerConfigSecret(secret: PullSecret): [string, RegistryCredential][] | undefined {
  const source = secretName(secret);
  const data = secret.data ?? {};
  let entries: [string, ConfigEntry][];
  const json = data[DOCKER_CONFIG_JSON_KEY];
  const cfg = data[DOCKERCFG_KEY];
  try {
    if (secret.type === SECRET_TYPE_DOCKER_CONFIG_JSON && json !== undefined && json !== '') {
      const doc = decodeJSON(source, DOCKER_CONFIG_JSON_KEY, json);
      if (doc !== null && !isObject(doc)) throw new Error(`${DOCKER_CONFIG_JSON_KEY} is not a JSON object`);
      entries = parseConfigMap(doc === null ? undefined : goField(doc, 'auths'));
    } else if (secret.type === SECRET_TYPE_DOCKERCFG && cfg !== undefined && cfg !== '') {
      entries = parseConfigMap(decodeJSON(source, DOCKERCFG_KEY, cfg));
    } else {
      return undefined;
    }
  } catch (err) {
    if (err instanceof KubeletError) throw err;
    throw parseError(source, (err as Error).message, err);
  }
  return entries.map(([loc, e]) => [loc, { ...e, source }]);
}

/**
 * The keyring index key for a config location (upstream BasicDockerKeyring.Add): scheme dropped,
 * `/v1/` or `/v2/` path prefixes mean the bare host, any other path stays (`quay.io/team`).
 * Undefined for a location that does not parse (upstream logs and ignores it).
 */
export function locationKey(location: string): string | undefined {
  let rest = location.replace(/^https?:\/\//, '');
  rest = rest.replace(/[?#].*$/, '');
  const slash = rest.indexOf('/');
  const hostPart = slash === -1 ? rest : rest.slice(0, slash);
  let path = slash === -1 ? '' : rest.slice(slash);
  const host = hostPart.slice(hostPart.lastIndexOf('@') + 1);
  if (host === '' && path === '') return undefined;
  const port = /:([^:\]]*)$/.exec(host)?.[1];
  if (port !== undefined && !/^\d*$/.test(port)) return undefined;
  if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
  return path !== '' && path !== '/' ? host + path : host;
}

/** Splits a schemeless `host[:port][/path]` as upstream's parseSchemelessUrl + splitUrl do. */
function splitLocation(s: string): { parts: string[]; port: string; path: string } {
  const slash = s.indexOf('/');
  const host = slash === -1 ? s : s.slice(0, slash);
  const path = slash === -1 ? '' : s.slice(slash);
  const m = /^(.*):(\d*)$/.exec(host);
  const name = m ? (m[1] ?? '') : host;
  return { parts: name.split('.'), port: m ? (m[2] ?? '') : '', path };
}

/**
 * Go's filepath.Match for one host label (labels hold no `/`): `*`, `?`, `\` escapes and simple
 * `[...]` classes (ranges, `^` negation). A pattern Go calls malformed matches nothing, as upstream
 * ignores the error; so does a class using escapes or brackets inside (never seen in a host name).
 */
export function globMatch(pattern: string, text: string): boolean {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? '';
    if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '\\') {
      i++;
      if (i >= pattern.length) return false;
      re += escapeRegExp(pattern[i] ?? '');
    } else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end === -1) return false;
      let body = pattern.slice(i + 1, end);
      const negate = body.startsWith('^');
      if (negate) body = body.slice(1);
      if (!/^[^\\[\]-][^\\[\]]*$/.test(body) || body.endsWith('-')) return false;
      re += `[${negate ? '^' : ''}${body}]`;
      i = end;
    } else re += escapeRegExp(c);
  }
  try {
    return new RegExp(`${re}$`).test(text);
  } catch {
    // An invalid class (e.g. a reversed range) is Go's ErrBadPattern: no match, as upstream.
    return false;
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * Whether a keyring location (possibly with `*` globs in host labels) covers `repository`
 * (upstream urlsMatch): same port, same number of host labels each matching, and the location's
 * path a string prefix of the repository's.
 */
export function locationMatches(location: string, repository: string): boolean {
  const g = splitLocation(location);
  const t = splitLocation(repository);
  if (g.port !== t.port || g.parts.length !== t.parts.length) return false;
  if (!t.path.startsWith(g.path)) return false;
  return g.parts.every((p, i) => globMatch(p, t.parts[i] ?? ''));
}

/** Whether `repository` is pulled from Docker Hub (upstream isDefaultRegistryMatch). */
export function isDefaultRegistryMatch(repository: string): boolean {
  const slash = repository.indexOf('/');
  const first = slash === -1 ? repository : repository.slice(0, slash);
  if (first === '') return false;
  if (slash === -1) return true;
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  return !/[.:]/.test(first);
}

/**
 * Builds the keyring from a pod's pull secrets (upstream MakeDockerKeyring, without the node's
 * keyring: `unionKeyring` adds it). Secrets of other types are skipped; a docker config secret
 * that does not parse throws.
 */
export function keyringFromSecrets(secrets: readonly PullSecret[]): Keyring {
  const entries: [string, RegistryCredential][] = [];
  for (const secret of secrets) entries.push(...(parseDockerConfigSecret(secret) ?? []));
  return keyringFromEntries(entries);
}

/**
 * A keyring over `[location, credential]` entries, in the order given (upstream BasicDockerKeyring
 * after Add). A location that does not parse is left out, as upstream does.
 */
export function keyringFromEntries(entries: readonly (readonly [string, RegistryCredential])[]): Keyring {
  const creds = new Map<string, RegistryCredential[]>();
  for (const [loc, cred] of entries) {
    const key = locationKey(loc);
    if (key === undefined) continue;
    const list = creds.get(key) ?? [];
    list.push(cred);
    creds.set(key, list);
  }
  // Reverse-sorted so that a longer (more specific) location sharing a prefix comes first:
  // `quay.io/team` before `quay.io`.
  const index = [...creds.keys()].sort().reverse();
  return {
    lookup(repository) {
      const out: RegistryCredential[] = [];
      for (const k of index) if (locationMatches(k, repository)) out.push(...(creds.get(k) ?? []));
      if (out.length > 0) return out;
      if (isDefaultRegistryMatch(repository)) return [...(creds.get(DEFAULT_REGISTRY_HOST) ?? [])];
      return [];
    },
    size: () => index.length,
  };
}

/**
 * Every keyring's matches, keyring by keyring (upstream UnionDockerKeyring): the pod's secrets
 * before the node's own credentials.
 */
export function unionKeyring(...keyrings: readonly Keyring[]): Keyring {
  return {
    lookup: (repository) => keyrings.flatMap((k) => k.lookup(repository)),
    size: () => keyrings.reduce((n, k) => n + k.size(), 0),
  };
}

/** A keyring that matches nothing. */
export const EMPTY_KEYRING: Keyring = { lookup: () => [], size: () => 0 };

/**
 * The registry entries of a docker `config.json` (its `auths` map), as upstream's
 * readDockerConfigJSONFileFromBytes reads them; other keys (`credsStore`, `credHelpers`, …) are
 * ignored, as upstream does. `source` names the file in each credential. Throws an Error saying
 * what is wrong when the text is not such a document.
 */
export function parseDockerConfigJSON(text: string, source: string): [string, RegistryCredential][] {
  const doc = JSON.parse(text) as unknown;
  if (doc !== null && !isObject(doc)) throw new Error('not a JSON object');
  const entries = parseConfigMap(doc === null ? undefined : goField(doc, 'auths'));
  return entries.map(([loc, e]) => [loc, { ...e, source }]);
}

/** The registry entries of a legacy `.dockercfg` (the registry map at top level); throws like above. */
export function parseDockercfg(text: string, source: string): [string, RegistryCredential][] {
  return parseConfigMap(JSON.parse(text) as unknown).map(([loc, e]) => [loc, { ...e, source }]);
}

/**
 * The CRI AuthConfig for a credential. Upstream sends username and password only (the `auth` field
 * is already decoded into them). Deliberate extension: a config's `identitytoken`/`registrytoken`
 * travel too (upstream drops them), so token-based secrets (e.g. ACR) work; containerd prefers
 * them over username/password when set.
 */
export function toAuthConfig(cred: RegistryCredential): AuthConfig {
  const auth: AuthConfig = { username: cred.username, password: cred.password };
  if (cred.identityToken !== undefined) auth.identityToken = cred.identityToken;
  if (cred.registryToken !== undefined) auth.registryToken = cred.registryToken;
  return auth;
}
