/**
 * `--version` as the kubelet prints it (upstream k8s.io/component-base/version/verflag):
 * `--version` (or `--version=true`) prints `Kubernetes <gitVersion>`, `--version=raw` prints the
 * version.Info struct in Go's `%#v` form; either way the process exits 0 before anything else is
 * checked. kubeadm's preflight reads the first form (`^\s*Kubernetes v(semver)\s*$`).
 *
 * The version is the one the Node reports: the Kubernetes API level tskubelet implements with
 * tskubelet's own version as a pre-release suffix (`v1.20.2-tskubelet.0.1.0`).
 */
import { InvalidArgumentError, Option } from 'commander';
import { kubeletVersionInfo, reportedKubeletVersion } from '../kubelet/index.ts';
import { isGoBool, parseGoBool } from './option-parsers.ts';

/** What `--version` asked for: upstream's VersionTrue / VersionRaw (VersionFalse: not printed). */
export type VersionRequest = 'true' | 'raw' | 'false';

/** upstream versionValue.Set: `raw`, else Go's ParseBool. */
export function parseVersionFlag(value: string): VersionRequest {
  if (value === 'raw') return 'raw';
  if (!isGoBool(value)) {
    throw new InvalidArgumentError(`strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`);
  }
  return parseGoBool(value) ? 'true' : 'false';
}

/** The `--version[=raw|bool]` option; `--version` alone means true (upstream NoOptDefVal). */
export function versionOption(): Option {
  return new Option('--version [raw|bool]', 'print version information and quit (--version=raw: in detail)')
    .preset('true')
    .argParser(parseVersionFlag);
}

/** The text `--version` prints, newline included; nothing for 'false'. */
export function versionText(request: VersionRequest, tskubeletVersion: string): string {
  const gitVersion = reportedKubeletVersion(tskubeletVersion);
  switch (request) {
    case 'false':
      return '';
    case 'true':
      return `Kubernetes ${gitVersion}\n`;
    case 'raw': {
      const v = kubeletVersionInfo(tskubeletVersion);
      const fields: [string, string][] = [
        ['Major', v.major],
        ['Minor', v.minor],
        ['GitVersion', v.gitVersion],
        ['GitCommit', v.gitCommit],
        ['GitTreeState', v.gitTreeState],
        ['BuildDate', v.buildDate],
        ['GoVersion', v.goVersion],
        ['Compiler', v.compiler],
        ['Platform', v.platform],
      ];
      return `version.Info{${fields.map(([k, v]) => `${k}:${JSON.stringify(v)}`).join(', ')}}\n`;
    }
  }
}
