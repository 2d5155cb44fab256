/**
 * tskubelet's version.Info (upstream k8s.io/component-base/version/version.go Get()): what
 * `--version=raw` prints and what kubernetes_build_info labels. The Kubernetes API level tskubelet
 * implements is the major/minor; the git version carries tskubelet's own version as a pre-release
 * suffix, as the Node's kubeletVersion does; Go's fields name Node.js instead.
 */
import { KUBERNETES_API_VERSION } from '../config/defaults.ts';
import { reportedKubeletVersion } from './cluster-connection.ts';

/** upstream version.Info, field for field. */
export interface VersionInfo {
  major: string;
  minor: string;
  gitVersion: string;
  gitCommit: string;
  gitTreeState: string;
  buildDate: string;
  goVersion: string;
  compiler: string;
  platform: string;
}

/** Node's process.arch in Go's GOARCH words. */
const GO_ARCH: Readonly<Record<string, string>> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm' };

export function kubeletVersionInfo(tskubeletVersion: string): VersionInfo {
  const [major = '', minor = ''] = KUBERNETES_API_VERSION.replace(/^v/, '').split('.');
  return {
    major,
    minor,
    gitVersion: reportedKubeletVersion(tskubeletVersion),
    gitCommit: '',
    gitTreeState: '',
    buildDate: '',
    goVersion: `node${process.version.replace(/^v/, '')}`,
    compiler: 'tskubelet',
    platform: `${process.platform}/${GO_ARCH[process.arch] ?? process.arch}`,
  };
}
