/**
 * The `run` command's kubelet-compatible flags. Flags given on the command line override the
 * `--config` file; flags not given never do (no commander defaults: a value is present only when
 * its flag was given). Both `--flag=value` and `--flag value` work.
 *
 * Upstream flags tskubelet does not implement yet are accepted (hidden from help) and reported as
 * warnings, so an existing kubelet command line keeps working; anything else is an error.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { boolOption, intOption, parseInt64, parseStringSlice } from './option-parsers.ts';
import { addServerFlags, serverFlagValues } from './server-flags.ts';
import {
  CLIENT_GO_DEFAULT_BURST,
  CLIENT_GO_DEFAULT_QPS,
  DEFAULT_CONTAINER_RUNTIME_ENDPOINT,
  DEFAULT_EVENT_BURST,
  DEFAULT_EVENT_RECORD_QPS,
  DEFAULT_FILE_CHECK_FREQUENCY_MS,
  DEFAULT_HEALTHZ_BIND_ADDRESS,
  DEFAULT_HEALTHZ_PORT,
  DEFAULT_HTTP_CHECK_FREQUENCY_MS,
  DEFAULT_KUBE_API_BURST,
  DEFAULT_KUBE_API_QPS,
  DEFAULT_MAX_PODS,
  DEFAULT_NODE_STATUS_MAX_IMAGES,
  DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS,
  DEFAULT_PORT,
  DEFAULT_REGISTRY_BURST,
  DEFAULT_REGISTRY_PULL_QPS,
  DEFAULT_ROOT_DIR,
  DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS,
  DEFAULT_SYNC_FREQUENCY_MS,
} from '../config/defaults.ts';
import {
  compileConfig,
  formatGoDuration,
  loadConfigFile,
  DEFAULT_LOG_FORMAT,
  DEFAULT_RUN_ONCE_TIMEOUT_MS,
  type CompileOptions,
  type CompiledConfig,
  type FlagValues,
  type RawTaint,
} from '../config/index.ts';
import { KubeletError } from '../util/errors.ts';

/** What commander stores, keyed by its camelCase attribute names; all optional (no defaults). */
type RunOptions = Pick<
  FlagValues,
  | 'syncFrequency'
  | 'fileCheckFrequency'
  | 'httpCheckFrequency'
  | 'nodeStatusUpdateFrequency'
  | 'runtimeRequestTimeout'
  | 'maxPods'
  | 'healthzPort'
  | 'healthzBindAddress'
  | 'containerRuntimeEndpoint'
  | 'address'
  | 'port'
  | 'readOnlyPort'
  | 'rootDir'
  | 'hostnameOverride'
  | 'kubeconfig'
  | 'logFormat'
  | 'registerNode'
  | 'registerWithTaints'
  | 'nodeLabels'
  | 'clusterDomain'
  | 'cgroupRoot'
  | 'cgroupDriver'
  | 'enforceNodeAllocatable'
  | 'seccompDefault'
  | 'allowedUnsafeSysctls'
> & {
  config?: string;
  podManifestPath?: string;
  manifestUrl?: string;
  manifestUrlHeader?: Record<string, string[]>;
  runonce?: boolean;
  runonceTimeout?: string;
  nodeIp?: string;
  clusterDns?: string[];
  v?: number;
  loggingFormat?: string;
  kubeApiQps?: number;
  kubeApiBurst?: number;
  eventQps?: number;
  eventBurst?: number;
  serializeImagePulls?: boolean;
  registryQps?: number;
  registryBurst?: number;
  nodeStatusMaxImages?: number;
  cgroupsPerQos?: boolean;
  podMaxPids?: number;
  cpuCfsQuota?: boolean;
  cpuCfsQuotaPeriod?: string;
};

/**
 * Upstream kubelet flags (cmd/kubelet/app/options, component-base logs) that tskubelet accepts
 * but ignores for now, `true` for boolean flags. Includes a few removed-but-common ones
 * (`--container-runtime`, `--network-plugin`, …) so older kubelet command lines still start.
 */
const NOT_IMPLEMENTED_FLAGS: Readonly<Record<string, boolean>> = {
  'config-dir': false,
  'bootstrap-kubeconfig': false,
  'cert-dir': false,
  'cloud-provider': false,
  'cloud-config': false,
  'lock-file': false,
  'exit-on-lock-contention': true,
  'minimum-container-ttl-duration': false,
  'maximum-dead-containers-per-container': false,
  'maximum-dead-containers': false,
  'register-schedulable': true,
  'keep-terminated-pod-volumes': true,
  'experimental-mounter-path': false,
  'experimental-allocatable-ignore-eviction': true,
  'fail-swap-on': true,
  'image-service-endpoint': false,
  'rotate-server-certificates': true,
  'rotate-certificates': true,
  'oom-score-adj': false,
  'volume-plugin-dir': false,
  'minimum-image-ttl-duration': false,
  'image-gc-high-threshold': false,
  'image-gc-low-threshold': false,
  'volume-stats-agg-period': false,
  'feature-gates': false,
  'kubelet-cgroups': false,
  'system-cgroups': false,
  'provider-id': false,
  'cpu-manager-policy': false,
  'cpu-manager-policy-options': false,
  'cpu-manager-reconcile-period': false,
  'qos-reserved': false,
  'topology-manager-policy': false,
  'topology-manager-scope': false,
  'topology-manager-policy-options': false,
  'hairpin-mode': false,
  'pod-cidr': false,
  'resolv-conf': false,
  'enable-controller-attach-detach': true,
  'make-iptables-util-chains': true,
  'iptables-masquerade-bit': false,
  'iptables-drop-bit': false,
  'kernel-memcg-notification': true,
  'local-storage-capacity-isolation': true,
  'max-open-files': false,
  'kube-api-content-type': false,
  'eviction-hard': false,
  'eviction-soft': false,
  'eviction-soft-grace-period': false,
  'eviction-pressure-transition-period': false,
  'eviction-max-pod-grace-period': false,
  'eviction-minimum-reclaim': false,
  'pods-per-core': false,
  'protect-kernel-defaults': true,
  'reserved-cpus': false,
  'system-reserved': false,
  'kube-reserved': false,
  'system-reserved-cgroup': false,
  'kube-reserved-cgroup': false,
  'memory-manager-policy': false,
  'reserved-memory': false,
  'log-flush-frequency': false,
  vmodule: false,
  'log-text-split-stream': true,
  'log-text-info-buffer-size': false,
  'log-json-split-stream': true,
  'log-json-info-buffer-size': false,
  'image-credential-provider-config': false,
  'image-credential-provider-bin-dir': false,
  'pod-infra-container-image': false,
  // Removed upstream, still common in scripts (e.g. the 1.20 peer kubelet in ENVIRONMENT.md).
  'container-runtime': false,
  'runtime-cgroups': false,
  'network-plugin': false,
  'cni-bin-dir': false,
  'cni-conf-dir': false,
  'image-pull-progress-deadline': false,
  'non-masquerade-cidr': false,
};

/**
 * Builds the `run` command. When it runs, it loads `--config` (if given), overlays the explicit
 * flags, validates, and calls `onRun` with the frozen config and every warning (unimplemented file
 * fields and flags, deprecated forms). Errors (`KubeletError('InvalidArgument' | 'NotFound')`)
 * propagate out of commander's `parseAsync`.
 */
export function buildRunCommand(
  onRun: (result: CompiledConfig) => Promise<void>,
  options: CompileOptions = {},
): Command {
  const cmd = new Command('run')
    .description('Run the kubelet: static pods from a directory or URL, optionally joined to a cluster.')
    .allowExcessArguments(false);

  const d = formatGoDuration;
  cmd
    .option('--config <file>', 'KubeletConfiguration file (YAML or JSON); explicit flags override it')
    .option('--kubeconfig <file>', 'kubeconfig for the API server; omit for standalone mode')
    .option(
      '--pod-manifest-path <path>',
      'directory of static pod files to run, or a single static pod file (staticPodPath)',
    )
    .option('--manifest-url <url>', 'URL of additional pod specifications to run (staticPodURL)')
    .addOption(
      new Option(
        '--manifest-url-header <key:value,...>',
        "HTTP headers for --manifest-url, e.g. 'a:hello,b:again'; repeatable, same names accumulate",
      ).argParser(parseManifestURLHeader),
    )
    .option(
      '--sync-frequency <duration>',
      `max period between syncing running pods (default ${d(DEFAULT_SYNC_FREQUENCY_MS)})`,
    )
    .option(
      '--file-check-frequency <duration>',
      `period between checks of --pod-manifest-path (default ${d(DEFAULT_FILE_CHECK_FREQUENCY_MS)})`,
    )
    .option(
      '--http-check-frequency <duration>',
      `period between fetches of --manifest-url (default ${d(DEFAULT_HTTP_CHECK_FREQUENCY_MS)})`,
    )
    .option(
      '--node-status-update-frequency <duration>',
      `period of node status computation (default ${d(DEFAULT_NODE_STATUS_UPDATE_FREQUENCY_MS)})`,
    )
    .option(
      '--runtime-request-timeout <duration>',
      `timeout of runtime requests except pull, logs, exec, attach (default ${d(DEFAULT_RUNTIME_REQUEST_TIMEOUT_MS)})`,
    )
    .option(
      '--container-runtime-endpoint <endpoint>',
      `CRI endpoint, unix:///path (default ${DEFAULT_CONTAINER_RUNTIME_ENDPOINT})`,
    )
    .addOption(
      intOption('--max-pods <n>', `number of pods this kubelet can run (default ${DEFAULT_MAX_PODS})`),
    )
    .addOption(
      intOption(
        '--healthz-port <port>',
        `port of the healthz endpoint, 0 disables (default ${DEFAULT_HEALTHZ_PORT})`,
      ),
    )
    .option(
      '--healthz-bind-address <ip>',
      `IP address for the healthz server (default ${DEFAULT_HEALTHZ_BIND_ADDRESS})`,
    )
    .option('--address <ip>', 'IP address the kubelet API listens on (default 0.0.0.0)')
    .addOption(intOption('--port <port>', `port of the kubelet API (HTTPS; default ${DEFAULT_PORT})`))
    .addOption(
      intOption(
        '--read-only-port <port>',
        'plain-HTTP port for read-only endpoints without authentication; 0 disables (default 0)',
      ),
    )
    .option('--root-dir <dir>', `directory for kubelet files (default ${DEFAULT_ROOT_DIR})`)
    .option('--hostname-override <name>', 'use this as the node name instead of the hostname')
    .option('--node-ip <ip>', 'IP address of the node (or a comma-separated IPv4/IPv6 pair)')
    .addOption(boolOption('--runonce', 'run the static pods once, then exit'))
    .option(
      '--runonce-timeout <duration>',
      `tskubelet only: how long --runonce waits for pods to run (default ${d(DEFAULT_RUN_ONCE_TIMEOUT_MS)})`,
    )
    .addOption(intOption('-v, --v <level>', 'log verbosity: 0-2 info, 3-4 debug, 5+ trace (default 0)'))
    .addOption(
      new Option('--logging-format <format>', `log format (default ${DEFAULT_LOG_FORMAT})`).choices([
        'json',
        'text',
      ]),
    )
    .addOption(new Option('--log-format <format>', 'alias of --logging-format').choices(['json', 'text']))
    .addOption(
      intOption(
        '--kube-api-qps <qps>',
        `QPS towards the API server, except events and heartbeats; 0 means ${CLIENT_GO_DEFAULT_QPS} (default ${DEFAULT_KUBE_API_QPS})`,
      ),
    )
    .addOption(
      intOption(
        '--kube-api-burst <n>',
        `burst towards the API server; 0 means ${CLIENT_GO_DEFAULT_BURST} (default ${DEFAULT_KUBE_API_BURST})`,
      ),
    )
    .addOption(
      intOption(
        '--event-qps <qps>',
        `QPS of event creation; 0 means ${CLIENT_GO_DEFAULT_QPS} (default ${DEFAULT_EVENT_RECORD_QPS})`,
      ),
    )
    .addOption(
      intOption(
        '--event-burst <n>',
        `burst of event creation; 0 means ${CLIENT_GO_DEFAULT_BURST} (default ${DEFAULT_EVENT_BURST})`,
      ),
    )
    .addOption(
      boolOption(
        '--serialize-image-pulls',
        'pull images one at a time; false without maxParallelImagePulls: no limit (default: at most 5 at once)',
      ),
    )
    .addOption(
      intOption(
        '--registry-qps <qps>',
        `image pulls started per second, 0 = no limit (default ${DEFAULT_REGISTRY_PULL_QPS})`,
      ),
    )
    .addOption(intOption('--registry-burst <n>', `burst of image pulls (default ${DEFAULT_REGISTRY_BURST})`))
    .addOption(
      intOption(
        '--node-status-max-images <n>',
        `images reported in the Node status, -1 = all (default ${DEFAULT_NODE_STATUS_MAX_IMAGES})`,
      ),
    )
    .addOption(boolOption('--register-node', 'register the Node with the API server (default true)'))
    .addOption(
      boolOption(
        '--cgroups-per-qos',
        'pod cgroups per QoS class under <cgroup-root>/kubepods (default true)',
      ),
    )
    .option('--cgroup-root <name>', 'cgroup kubepods is created under (default /)')
    .option('--cgroup-driver <driver>', 'cgroup driver; only cgroupfs is supported (default cgroupfs)')
    .addOption(
      new Option('--pod-max-pids <n>', 'pids limit of each pod cgroup, -1 = none (default -1)').argParser(
        parseInt64,
      ),
    )
    .addOption(boolOption('--cpu-cfs-quota', 'CFS quota for pod cpu limits (default true)'))
    .option('--cpu-cfs-quota-period <duration>', 'CFS period of pod cgroups, 1ms to 1s (default 100ms)')
    .addOption(
      new Option(
        '--enforce-node-allocatable <pods|none,...>',
        "node allocatable enforcement: 'pods' or empty/'none' (default pods); repeatable",
      ).argParser(parseStringSlice),
    )
    .addOption(
      new Option(
        '--register-with-taints <key=value:Effect,...>',
        'taints for the Node when it registers, e.g. a=b:NoSchedule,c:NoExecute; the last use wins',
      ).argParser(parseRegisterWithTaints),
    )
    .addOption(
      new Option(
        '--node-labels <key=value,...>',
        'labels for the Node when it registers; repeatable. In the kubernetes.io and k8s.io ' +
          'namespaces only [*.]kubelet.kubernetes.io/, [*.]node.kubernetes.io/ and the well-known node labels',
      ).argParser(parseNodeLabels),
    )
    .option(
      '--cluster-domain <domain>',
      'DNS domain of the cluster (e.g. cluster.local): search domains of ClusterFirst pods',
    )
    .addOption(
      new Option(
        '--cluster-dns <ip,...>',
        'nameserver IPs of ClusterFirst pods (without: they use the host resolv.conf); repeatable',
      ).argParser(parseStringSlice),
    )
    .addOption(
      boolOption(
        '--seccomp-default',
        'RuntimeDefault seccomp for containers that set no profile (default false)',
      ),
    )
    .addOption(
      new Option(
        '--allowed-unsafe-sysctls <names,...>',
        "unsafe sysctls pods may set (names or 'prefix*', namespaced only), e.g. 'kernel.msg*,net.core.somaxconn'; repeatable",
      ).argParser(parseStringSlice),
    );

  addServerFlags(cmd);

  const notImplemented: Option[] = [];
  for (const [name, isBool] of Object.entries(NOT_IMPLEMENTED_FLAGS)) {
    const option = isBool
      ? boolOption(`--${name}`, 'not implemented (ignored)')
      : new Option(`--${name} <value>`, 'not implemented (ignored)');
    option.hideHelp();
    notImplemented.push(option);
    cmd.addOption(option);
  }

  cmd.action(async () => {
    const o = cmd.opts<RunOptions>();
    const warnings: string[] = [];
    for (const option of notImplemented) {
      if (cmd.getOptionValueSource(option.attributeName()) === 'cli') {
        warnings.push(
          `flag ${option.long ?? option.flags} is not implemented by tskubelet yet and is ignored`,
        );
      }
    }
    if (o.logFormat !== undefined && o.loggingFormat !== undefined && o.logFormat !== o.loggingFormat) {
      throw new KubeletError(
        'InvalidArgument',
        'parse flags',
        `--log-format=${o.logFormat} conflicts with --logging-format=${o.loggingFormat}`,
      );
    }
    const flags: FlagValues = {
      staticPodPath: o.podManifestPath,
      staticPodURL: o.manifestUrl,
      staticPodURLHeader: o.manifestUrlHeader,
      syncFrequency: o.syncFrequency,
      fileCheckFrequency: o.fileCheckFrequency,
      httpCheckFrequency: o.httpCheckFrequency,
      nodeStatusUpdateFrequency: o.nodeStatusUpdateFrequency,
      runtimeRequestTimeout: o.runtimeRequestTimeout,
      maxPods: o.maxPods,
      healthzPort: o.healthzPort,
      healthzBindAddress: o.healthzBindAddress,
      containerRuntimeEndpoint: o.containerRuntimeEndpoint,
      address: o.address,
      port: o.port,
      readOnlyPort: o.readOnlyPort,
      runOnce: o.runonce,
      runOnceTimeout: o.runonceTimeout,
      rootDir: o.rootDir,
      hostnameOverride: o.hostnameOverride,
      nodeIP: o.nodeIp,
      kubeconfig: o.kubeconfig,
      verbosity: o.v,
      logFormat: o.loggingFormat ?? o.logFormat,
      kubeAPIQPS: o.kubeApiQps,
      kubeAPIBurst: o.kubeApiBurst,
      eventRecordQPS: o.eventQps,
      eventBurst: o.eventBurst,
      serializeImagePulls: o.serializeImagePulls,
      registryPullQPS: o.registryQps,
      registryBurst: o.registryBurst,
      nodeStatusMaxImages: o.nodeStatusMaxImages,
      registerNode: o.registerNode,
      registerWithTaints: o.registerWithTaints,
      nodeLabels: o.nodeLabels,
      clusterDomain: o.clusterDomain,
      clusterDNS: o.clusterDns,
      cgroupsPerQOS: o.cgroupsPerQos,
      cgroupRoot: o.cgroupRoot,
      cgroupDriver: o.cgroupDriver,
      podPidsLimit: o.podMaxPids,
      cpuCFSQuota: o.cpuCfsQuota,
      cpuCFSQuotaPeriod: o.cpuCfsQuotaPeriod,
      enforceNodeAllocatable: o.enforceNodeAllocatable,
      seccompDefault: o.seccompDefault,
      allowedUnsafeSysctls: o.allowedUnsafeSysctls,
    };
    for (const key of Object.keys(flags) as (keyof FlagValues)[]) {
      if (flags[key] === undefined) delete flags[key];
    }
    const server = serverFlagValues(cmd);
    if (server) flags.server = server;
    // Upstream treats an empty --config as "no file".
    const file = o.config ? await loadConfigFile(o.config) : undefined;
    const compiled = compileConfig(file, flags, options);
    await onRun({ config: compiled.config, warnings: [...compiled.warnings, ...warnings] });
  });
  return cmd;
}

/**
 * Parses `run` arguments (without the `run` word itself) into the compiled config, without
 * printing or exiting: commander usage errors become `KubeletError('InvalidArgument', 'parse flags')`.
 * For tests and callers that need the config without running anything.
 */
export async function parseRunArgs(
  argv: readonly string[],
  options: CompileOptions = {},
): Promise<CompiledConfig> {
  let result: CompiledConfig | undefined;
  const cmd = buildRunCommand(async (r) => {
    result = r;
    return Promise.resolve();
  }, options);
  cmd.exitOverride();
  cmd.configureOutput({ writeOut: () => {}, writeErr: () => {} });
  try {
    await cmd.parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      throw new KubeletError('InvalidArgument', 'parse flags', err.message.replace(/^error: /, ''), {
        cause: err,
      });
    }
    throw err;
  }
  if (result === undefined)
    throw new KubeletError('Internal', 'parse flags', 'the run action did not complete');
  return result;
}

/**
 * One `--manifest-url-header` value, upstream's colon-separated multimap format: comma-separated
 * `name:value` pairs, split at the first colon, both sides trimmed, empty pairs skipped. Repeated
 * flags accumulate (`previous`); the first use replaces whatever the config file had.
 */
export function parseManifestURLHeader(
  value: string,
  previous: Record<string, string[]> | undefined,
): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(previous ?? {})) out[k] = [...v];
  for (const pair of value.split(',')) {
    if (pair === '') continue;
    const colon = pair.indexOf(':');
    if (colon < 0)
      throw new InvalidArgumentError(`malformed pair ${JSON.stringify(pair)}, expected key:value`);
    const name = pair.slice(0, colon).trim();
    const headerValue = pair.slice(colon + 1).trim();
    (out[name] ??= []).push(headerValue);
  }
  return out;
}

/**
 * One `--register-with-taints` value: comma-separated `key=value:Effect` or `key:Effect` (upstream
 * ParseTaints). Each use replaces the previous one, as upstream; an empty value means no taints.
 * Only the shape is checked here; key, value and effect are validated with the file's taints.
 * The removal form `key:Effect-` means nothing at registration (upstream silently drops it), so
 * it is refused.
 */
export function parseRegisterWithTaints(value: string): RawTaint[] {
  if (value === '') return [];
  return value.split(',').map((spec): RawTaint => {
    if (spec.endsWith('-')) {
      throw new InvalidArgumentError(
        `${JSON.stringify(spec)} is a taint removal, which registration cannot use`,
      );
    }
    const parts = spec.split(':');
    if (parts.length !== 2) {
      throw new InvalidArgumentError(
        `malformed taint ${JSON.stringify(spec)}, expected key=value:Effect or key:Effect`,
      );
    }
    const [keyValue = '', effect = ''] = parts;
    const kv = keyValue.split('=');
    if (kv.length > 2) {
      throw new InvalidArgumentError(`malformed taint ${JSON.stringify(spec)}: more than one "="`);
    }
    const [key = '', taintValue] = kv;
    return taintValue === undefined ? { key, effect } : { key, value: taintValue, effect };
  });
}

/**
 * One `--node-labels` value: comma-separated `key=value` pairs (upstream ConfigurationMap): split
 * at the first `=`, both sides trimmed, a pair without `=` gets an empty value, empty pairs are
 * skipped. Repeated flags accumulate, a later key replaces an earlier one. Validated when compiling.
 */
export function parseNodeLabels(
  value: string,
  previous: Record<string, string> | undefined,
): Record<string, string> {
  const out: Record<string, string> = { ...previous };
  for (const pair of value.split(',')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 0) out[pair.trim()] = '';
    else out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

export { parseStringSlice };
