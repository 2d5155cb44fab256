/**
 * From a decoded file and the given flags to the frozen `KubeletConfig`: every setting of the
 * field table resolved (flag over file over default, `resolve.ts`) and checked, the settings that
 * depend on each other defaulted and checked together, every problem reported at once.
 */
import { hostname as osHostname } from 'node:os';
import path from 'node:path';
import { isDNSDomainName } from '../api/names.ts';
import { KubeletError } from '../util/errors.ts';
import {
  CERT_DIR_NAME,
  CHANGE_DETECTION_STRATEGIES,
  CLIENT_GO_DEFAULT_BURST,
  DEFAULT_CONFIGMAP_AND_SECRET_CHANGE_DETECTION_STRATEGY,
  CLIENT_GO_DEFAULT_QPS,
  DEFAULT_LOG_FORMAT,
  DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS,
} from './defaults.ts';
import { tryParseGoDuration } from './duration.ts';
import { KUBELET_FIELDS, type FieldSpec, type KubeletFieldKey } from './fields.ts';
import type {
  ChangeDetectionStrategy,
  CompileOptions,
  CompiledConfig,
  KubeletConfig,
  LogFormat,
} from './kubelet-config.ts';
import type { DecodedConfigFile, FlagValues, RawKubeletConfiguration } from './raw.ts';
import { fileValueAt, resolveField } from './resolve.ts';
import { isLoopbackIP } from './console-address.ts';
import { compileServerSettings } from './server-config.ts';
import { mergeFeatureGates } from './feature-gates.ts';
import { clientLimit, normalizeRuntimeEndpoint, toTaints } from './validate.ts';
import {
  containerGCSettings,
  evictionSettings,
  imageGCSettings,
  imagePullSettings,
  podCgroupSettings,
  shutdownSettings,
  type Field,
} from './settings-groups.ts';

/**
 * Merges a decoded file (may be undefined: flags and defaults only) and explicitly given flags into
 * the compiled configuration. File values get upstream's v1beta1 defaulting (a zero or empty value
 * means "use the default" where the field table says so); explicit flags are applied after
 * defaulting, so `--max-pods=0` means 0. Every invalid value is collected and thrown together as one
 * `KubeletError('InvalidArgument')` naming each field (`syncFrequency` when it came from the file,
 * `--sync-frequency` from a flag).
 */
export function compileConfig(
  file: DecodedConfigFile | undefined,
  flags: FlagValues = {},
  options: CompileOptions = {},
): CompiledConfig {
  const raw: RawKubeletConfiguration = file?.raw ?? {};
  const errors: string[] = [];
  const warnings: string[] = [...(file?.warnings ?? [])];
  const given: Readonly<Record<string, unknown>> = flags;
  const field = <K extends KubeletFieldKey>(key: K, fallback?: number): Field<K> => {
    const spec = KUBELET_FIELDS[key];
    const fileValue = fileValueAt(raw, (spec as FieldSpec).file);
    return resolveField(spec, given[key], fileValue, errors, fallback);
  };
  const value = <K extends KubeletFieldKey>(key: K): Field<K>['value'] => field(key).value;

  const containerRuntimeEndpoint = normalizeRuntimeEndpoint(
    field('containerRuntimeEndpoint'),
    errors,
    warnings,
  );
  const rootDir = path.resolve(options.cwd ?? process.cwd(), value('rootDir'));
  const { nodeName, hostnameOverride } = nodeNameOf(value('hostnameOverride'), options, errors, warnings);

  // Upstream defaulting: a file that sets nodeStatusUpdateFrequency but not
  // nodeStatusReportFrequency gets the update frequency as report frequency (backward
  // compatibility). Flags are applied after defaulting upstream, so the flag does not do this.
  const fileUpdate =
    raw.nodeStatusUpdateFrequency === undefined
      ? undefined
      : tryParseGoDuration(raw.nodeStatusUpdateFrequency);
  const reportFallbackMs =
    fileUpdate?.ok && fileUpdate.ms > 0 ? fileUpdate.ms : DEFAULT_NODE_STATUS_REPORT_FREQUENCY_MS;

  const logFormatValue = value('logFormat');
  const logFormat: LogFormat =
    logFormatValue === 'json' || logFormatValue === 'text' ? logFormatValue : DEFAULT_LOG_FORMAT;

  const fields = {
    staticPodPath: value('staticPodPath') || undefined,
    staticPodURL: value('staticPodURL') || undefined,
    staticPodURLHeader: value('staticPodURLHeader'),
    fileCheckFrequencyMs: value('fileCheckFrequency'),
    httpCheckFrequencyMs: value('httpCheckFrequency'),
    syncFrequencyMs: value('syncFrequency'),
    maxPods: value('maxPods'),
    healthzPort: value('healthzPort'),
    healthzBindAddress: value('healthzBindAddress'),
    containerRuntimeEndpoint,
    runtimeRequestTimeoutMs: value('runtimeRequestTimeout'),
    nodeStatusUpdateFrequencyMs: value('nodeStatusUpdateFrequency'),
    podLogsDir: value('podLogsDir'),
    address: value('address'),
    port: value('port'),
    readOnlyPort: value('readOnlyPort'),
    rootDir,
    hostnameOverride,
    nodeName,
    nodeIP: value('nodeIP'),
    runOnce: value('runOnce'),
    runOnceTimeoutMs: value('runOnceTimeout'),
    verbosity: value('verbosity'),
    vmodule: value('vmodule'),
    logFlushFrequencyMs: value('logFlushFrequency'),
    logFormat,
    kubeconfig: value('kubeconfig'),
    bootstrapKubeconfig: value('bootstrapKubeconfig'),
    certDirectory: path.resolve(
      options.cwd ?? process.cwd(),
      value('certDirectory') ?? path.join(rootDir, CERT_DIR_NAME),
    ),
    rotateCertificates: value('rotateCertificates'),
    serverTLSBootstrap: value('serverTLSBootstrap'),
    featureGates: mergeFeatureGates(raw.featureGates, flags.featureGates, errors, warnings),
    kubeAPIQPS: clientLimit(value('kubeAPIQPS'), CLIENT_GO_DEFAULT_QPS),
    kubeAPIBurst: clientLimit(value('kubeAPIBurst'), CLIENT_GO_DEFAULT_BURST),
    eventRecordQPS: clientLimit(value('eventRecordQPS'), CLIENT_GO_DEFAULT_QPS),
    eventBurst: clientLimit(value('eventBurst'), CLIENT_GO_DEFAULT_BURST),
    nodeStatusReportFrequencyMs: field('nodeStatusReportFrequency', reportFallbackMs).value,
    nodeLeaseDurationSeconds: value('nodeLeaseDurationSeconds'),
    registerNode: value('registerNode'),
    registerWithTaints: toTaints(value('registerWithTaints')),
    nodeLabels: value('nodeLabels'),
    resolvConf: value('resolvConf'),
    clusterDomain: value('clusterDomain'),
    clusterDNS: value('clusterDNS'),
    ...podCgroupSettings(field, errors),
    seccompDefault: value('seccompDefault'),
    singleProcessOOMKill: value('singleProcessOOMKill'),
    runtimePacing: value('runtimePacing'),
    consoleAddress: value('consoleAddress') || undefined,
    eventedPleg: value('eventedPleg'),
    csiCallTimeoutMs: value('csiCallTimeout'),
    allowedUnsafeSysctls: value('allowedUnsafeSysctls'),
    ...imagePullSettings(field, errors, warnings),
    nodeStatusMaxImages: value('nodeStatusMaxImages'),
    configMapAndSecretChangeDetectionStrategy: changeDetectionStrategy(
      value('configMapAndSecretChangeDetectionStrategy'),
    ),
    ...imageGCSettings(field, errors),
    ...evictionSettings(field, errors),
    ...containerGCSettings(field, warnings),
    ...shutdownSettings(field, errors),
  };
  if (fields.bootstrapKubeconfig && !fields.kubeconfig) {
    errors.push('--bootstrap-kubeconfig: needs --kubeconfig (the file TLS bootstrap writes)');
  }
  // Standalone, nothing can sign: upstream's managers then never get a certificate (its kubelet
  // API refuses every handshake); here the self-signed serving pair stays.
  if (!fields.kubeconfig) {
    if (fields.serverTLSBootstrap) {
      warnings.push(
        'serverTLSBootstrap needs an API server (--kubeconfig); the kubelet API serves its self-signed certificate',
      );
    }
    if (fields.rotateCertificates)
      warnings.push('rotateCertificates needs an API server (--kubeconfig); ignored');
  }
  const server = compileServerSettings(flags.server ?? {}, raw, errors, warnings);
  warnings.push(...listenerWarnings(fields, server.enableServer, server.enableDebuggingHandlers));

  if (errors.length > 0) {
    const dropIns = file?.dropIns?.length ? `, drop-ins ${file.dropIns.join(' ')}` : '';
    const op = file
      ? `validate kubelet configuration (file ${file.path}${dropIns}, flags)`
      : 'validate kubelet flags';
    throw new KubeletError('InvalidArgument', op, errors.join('; '));
  }
  const config: KubeletConfig = withoutUndefined({ configFile: file?.path, ...fields, server });
  return { config: deepFreeze(structuredClone(config)), warnings };
}

/**
 * The plain-HTTP listeners without authentication that upstream opens without a word: still taken
 * (upstream compatibility), each reported.
 */
function listenerWarnings(
  c: Pick<
    KubeletConfig,
    'healthzPort' | 'healthzBindAddress' | 'address' | 'readOnlyPort' | 'consoleAddress'
  >,
  enableServer: boolean,
  enableDebuggingHandlers: boolean,
): string[] {
  const out: string[] = [];
  if (c.healthzPort > 0 && !isLoopbackIP(c.healthzBindAddress)) {
    out.push(
      `healthz listener: ${c.healthzBindAddress} (--healthz-bind-address / healthzBindAddress) is not a ` +
        `loopback address: /healthz on port ${c.healthzPort} answers anyone who can reach it, ` +
        'unauthenticated plain HTTP, without the loopback Host check that refuses DNS rebinding',
    );
  }
  if (enableServer && c.readOnlyPort > 0) {
    out.push(
      `kubelet API: the read-only port ${c.readOnlyPort} (--read-only-port / readOnlyPort) is enabled: ` +
        `unauthenticated, plain HTTP on ${c.address}; anyone who reaches it reads every pod's spec and ` +
        "status (env values included) at /pods, and the node's stats and metrics",
    );
  }
  // Without the debugging handlers the listener is not opened (the kubelet API says so at start).
  if (enableServer && enableDebuggingHandlers && c.consoleAddress) {
    out.push(
      `node console: the console listener on ${c.consoleAddress} (--console-address) is enabled: ` +
        "unauthenticated plain HTTP; every user and process on this node reads every pod's spec " +
        '(env values included) and container logs there',
    );
  }
  return out;
}

/** The checked value (the row's check reports anything else; the default stands in until then). */
function changeDetectionStrategy(value: string): ChangeDetectionStrategy {
  return (
    CHANGE_DETECTION_STRATEGIES.find((s) => s === value) ??
    DEFAULT_CONFIGMAP_AND_SECRET_CHANGE_DETECTION_STRATEGY
  );
}

/** nodeutil.GetHostname: the override if given, else the hostname; trimmed, lowercased, non-empty. */
function nodeNameOf(
  override: string | undefined,
  options: CompileOptions,
  errors: string[],
  warnings: string[],
): { nodeName: string; hostnameOverride: string | undefined } {
  const nameSource = override !== undefined && override !== '' ? '--hostname-override' : 'hostname';
  const rawName = nameSource === 'hostname' ? (options.hostname ?? osHostname)() : (override ?? '');
  const nodeName = rawName.trim().toLowerCase();
  if (nodeName === '') {
    errors.push(`${nameSource}: empty node name is invalid`);
  } else if (!isDNSDomainName(nodeName)) {
    warnings.push(
      `node name ${JSON.stringify(nodeName)} (from ${nameSource}) is not a valid DNS-1123 subdomain; ` +
        'the API server will reject its Node and mirror pods',
    );
  }
  return { nodeName, hostnameOverride: override?.trim() || undefined };
}

function withoutUndefined<T extends object>(obj: T): T {
  for (const key of Object.keys(obj) as (keyof T)[]) {
    if (obj[key] === undefined) delete obj[key];
  }
  return obj;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
