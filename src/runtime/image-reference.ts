/**
 * Image references as docker's reference.ParseNormalizedNamed parses and normalizes them, and the pull
 * policy the API server defaults from one (upstream SetDefaults_Container).
 */
import type { PullPolicy } from '../api/types.ts';

/** An image reference, parsed and normalized as docker's reference.ParseNormalizedNamed does. */
export interface ImageReference {
  /** e.g. `docker.io`, `127.0.0.1:5000` */
  domain: string;
  /** e.g. `library/busybox` */
  path: string;
  /** `domain/path`: what credentials are looked up by (upstream repoToPull). */
  repository: string;
  tag: string | undefined;
  digest: string | undefined;
}

const DEFAULT_DOMAIN = 'docker.io';
const LEGACY_DEFAULT_DOMAIN = 'index.docker.io';
const NAME_TOTAL_LENGTH_MAX = 255;
const ALPHA_NUMERIC = '[a-z0-9]+';
const SEPARATOR = '(?:[._]|__|[-]+)';
const NAME_COMPONENT = `${ALPHA_NUMERIC}(?:${SEPARATOR}${ALPHA_NUMERIC})*`;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[0-9a-fA-F:.]+\\])(?::[0-9]+)?`;
const PATH_RE = new RegExp(`^${NAME_COMPONENT}(?:/${NAME_COMPONENT})*$`);
const DOMAIN_RE = new RegExp(`^${DOMAIN}$`);
const TAG_RE = /^[\w][\w.-]{0,127}$/;
const DIGEST_RE = /^([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*):([0-9a-fA-F]{32,})$/;
const DIGEST_HEX_LENGTH: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };

/** Parses an image reference; throws an Error whose message says why it is invalid. */
export function parseImageReference(image: string): ImageReference {
  if (/^[a-f0-9]{64}$/.test(image)) {
    throw new Error(`invalid repository name (${image}), cannot specify 64-byte hexadecimal strings`);
  }
  let rest = image;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    const m = DIGEST_RE.exec(digest);
    if (!m) throw new Error('invalid reference format');
    const want = DIGEST_HEX_LENGTH[m[1] ?? ''];
    if (want === undefined) throw new Error('unsupported digest algorithm');
    if ((m[2] ?? '').length !== want) throw new Error('invalid checksum digest length');
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG_RE.test(tag)) throw new Error('invalid reference format');
  }
  const slash = rest.indexOf('/');
  const first = slash === -1 ? '' : rest.slice(0, slash);
  let domain: string;
  let path: string;
  if (slash === -1 || (!/[.:]/.test(first) && first !== 'localhost' && first.toLowerCase() === first)) {
    domain = DEFAULT_DOMAIN;
    path = rest;
  } else {
    domain = first;
    path = rest.slice(slash + 1);
  }
  if (domain === LEGACY_DEFAULT_DOMAIN) domain = DEFAULT_DOMAIN;
  if (domain === DEFAULT_DOMAIN && !path.includes('/')) path = `library/${path}`;
  if (path.toLowerCase() !== path) throw new Error('repository name must be lowercase');
  if (!DOMAIN_RE.test(domain) || !PATH_RE.test(path)) throw new Error('invalid reference format');
  const repository = `${domain}/${path}`;
  if (repository.length > NAME_TOTAL_LENGTH_MAX) {
    throw new Error(`repository name must not be more than ${NAME_TOTAL_LENGTH_MAX} characters`);
  }
  return { domain, path, repository, tag, digest };
}

/** Upstream SetDefaults_Container: `Always` when the tag is `latest` (or absent without a digest). */
export function defaultPullPolicyFor(ref: ImageReference): PullPolicy {
  const tag = ref.tag ?? (ref.digest === undefined ? 'latest' : '');
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}
