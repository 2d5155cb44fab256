/**
 * kubernetes_build_info (upstream k8s.io/component-base/metrics/version.go RegisterBuildInfo,
 * registered with the legacy registry every component serves): a constant 1 labelled with the
 * version.Info the binary was built with, here tskubelet's (src/kubelet/version-info.ts).
 */
import { Gauge, type Registry } from 'prom-client';
import type { VersionInfo } from '../kubelet/index.ts';

const HELP =
  "[ALPHA] A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree " +
  'state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.';

export function registerBuildInfo(registry: Registry, v: VersionInfo): void {
  new Gauge({
    name: 'kubernetes_build_info',
    help: HELP,
    labelNames: [
      'major',
      'minor',
      'git_version',
      'git_commit',
      'git_tree_state',
      'build_date',
      'go_version',
      'compiler',
      'platform',
    ],
    registers: [registry],
  }).set(
    {
      major: v.major,
      minor: v.minor,
      git_version: v.gitVersion,
      git_commit: v.gitCommit,
      git_tree_state: v.gitTreeState,
      build_date: v.buildDate,
      go_version: v.goVersion,
      compiler: v.compiler,
      platform: v.platform,
    },
    1,
  );
}
