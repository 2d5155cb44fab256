/**
 * The node's own registry credentials (upstream pkg/credentialprovider config.go and provider.go,
 * the `.dockercfg` provider): the kubelet reads a docker config file of its own and offers its
 * credentials for every pull, after the pod's imagePullSecrets.
 *
 * Search order, as upstream (the first file that reads and parses wins; nothing is merged):
 *   1. `config.json` in the kubelet root dir (upstream's preferred path, set to --root-dir),
 *      the working directory, `$HOME/.docker`, `/.docker`;
 *   2. only when none of those is usable, `.dockercfg` in the root dir, the working directory,
 *      `$HOME`, `/`.
 * A file that is missing is skipped silently, one that cannot be read or parsed is skipped with a
 * warning (upstream logs it at V(4) and moves on). The result is cached for a short while.
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { NODE_DOCKER_CONFIG_CACHE_MS } from '../config/defaults.ts';
import { describeError } from '../util/errors.ts';
import { nullLogger, type Logger } from '../util/logger.ts';
import {
  EMPTY_KEYRING,
  keyringFromEntries,
  parseDockerConfigJSON,
  parseDockercfg,
  type Keyring,
  type RegistryCredential,
} from './pull-secrets.ts';
import { monotonicNow } from '../util/clock.ts';
import { singleFlight } from '../util/single-flight.ts';

export const DOCKER_CONFIG_JSON_FILE = 'config.json';
export const DOCKERCFG_FILE = '.dockercfg';

export interface DockerConfigLocations {
  /** The kubelet root dir (upstream preferred path). */
  rootDir: string;
  /** Working directory; default `process.cwd()`. */
  cwd?: string;
  /** Home directory; default `os.homedir()`. */
  home?: string;
  /** The filesystem root; default `/` (tests point it at a temporary directory). */
  fsRoot?: string;
}

/** The files looked at, in order: every `config.json` candidate, then every `.dockercfg` one. */
export interface DockerConfigSearchPaths {
  configJSON: string[];
  dockercfg: string[];
}

/** Upstream DefaultDockerConfigJSONPaths / DefaultDockercfgPaths, as absolute file paths. */
export function dockerConfigSearchPaths(loc: DockerConfigLocations): DockerConfigSearchPaths {
  const cwd = loc.cwd ?? process.cwd();
  const home = loc.home ?? homedir();
  const root = loc.fsRoot ?? '/';
  const abs = (...parts: string[]) => path.resolve(cwd, ...parts);
  return {
    configJSON: [loc.rootDir, cwd, path.join(home, '.docker'), path.join(root, '.docker')].map((d) =>
      abs(d, DOCKER_CONFIG_JSON_FILE),
    ),
    dockercfg: [loc.rootDir, cwd, home, root].map((d) => abs(d, DOCKERCFG_FILE)),
  };
}

/** What one search found. */
export interface NodeDockerConfig {
  /** The file the credentials come from; undefined when no usable file was found. */
  path: string | undefined;
  /** `[location, credential]` in file order; each credential's `source` is the file path. */
  entries: [string, RegistryCredential][];
  /** Files that exist but were skipped, with why (unreadable, not valid JSON, wrong shape). */
  skipped: { path: string; reason: string }[];
}

/** Reads the first usable docker config file along the search paths (upstream ReadDockerConfigFile). */
export async function readNodeDockerConfig(paths: DockerConfigSearchPaths): Promise<NodeDockerConfig> {
  const skipped: NodeDockerConfig['skipped'] = [];
  const candidates: [string, (text: string, source: string) => [string, RegistryCredential][]][] = [
    ...paths.configJSON.map((p): [string, typeof parseDockerConfigJSON] => [p, parseDockerConfigJSON]),
    ...paths.dockercfg.map((p): [string, typeof parseDockercfg] => [p, parseDockercfg]),
  ];
  for (const [file, parse] of candidates) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') skipped.push({ path: file, reason: describeError(err) });
      continue;
    }
    try {
      return { path: file, entries: parse(text, file), skipped };
    } catch (err) {
      skipped.push({ path: file, reason: describeError(err) });
    }
  }
  return { path: undefined, entries: [], skipped };
}

export interface NodeCredentialsOptions extends DockerConfigLocations {
  /** How long a read is reused; default NODE_DOCKER_CONFIG_CACHE_MS. */
  cacheMs?: number;
  /** Monotonic ms for the cache period; default util/clock's. */
  monotonic?: () => number;
  logger?: Logger;
}

/** The node's keyring, kept fresh (upstream CachingDockerConfigProvider over the default provider). */
export interface NodeCredentials {
  /**
   * The credentials of the node's docker config file. Reads the files again once the cached copy
   * is older than the cache period; concurrent callers share one read. Never rejects: with no
   * usable file the keyring is empty, and skipped files are logged.
   */
  keyring(): Promise<Keyring>;
  /** The search paths, in order (for logs and `why`). */
  readonly paths: DockerConfigSearchPaths;
}

export function createNodeCredentials(opts: NodeCredentialsOptions): NodeCredentials {
  const paths = dockerConfigSearchPaths(opts);
  const cacheMs = opts.cacheMs ?? NODE_DOCKER_CONFIG_CACHE_MS;
  const now = opts.monotonic ?? monotonicNow;
  const log = opts.logger ?? nullLogger;
  let cached: { at: number; keyring: Keyring } | undefined;
  const reading = singleFlight<Keyring>();
  // What the last read reported, so a file that stays broken is not reported at every pull.
  let lastReport = '';

  async function read(): Promise<Keyring> {
    let found: NodeDockerConfig;
    try {
      found = await readNodeDockerConfig(paths);
    } catch (err) {
      // readNodeDockerConfig handles every file error itself; this is a bug, not a missing file.
      log.error('cannot read the node registry credentials; pulling without them', {
        err: describeError(err),
      });
      return EMPTY_KEYRING;
    }
    const report = JSON.stringify([found.path, found.entries.length, found.skipped]);
    if (report !== lastReport) {
      lastReport = report;
      for (const s of found.skipped) {
        log.warn('skipping an unusable docker config file for node registry credentials', {
          path: s.path,
          reason: s.reason,
        });
      }
      if (found.path !== undefined) {
        log.info('node registry credentials', {
          path: found.path,
          registries: [...new Set(found.entries.map(([loc]) => loc))],
        });
      } else {
        log.debug('no docker config file for node registry credentials', {
          searched: [...paths.configJSON, ...paths.dockercfg],
        });
      }
    }
    return keyringFromEntries(found.entries);
  }

  return {
    paths,
    keyring() {
      if (cached !== undefined && now() - cached.at < cacheMs) return Promise.resolve(cached.keyring);
      return reading.run(() =>
        read().then((keyring) => {
          cached = { at: now(), keyring };
          return keyring;
        }),
      );
    },
  };
}
