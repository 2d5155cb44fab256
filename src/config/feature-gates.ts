/**
 * Feature gates (upstream k8s.io/component-base/featuregate): the `featureGates` file field and the
 * `--feature-gates` flag, checked against the gates a kubelet 1.20.2 binary knows, the way
 * `featureGate.SetFromMap` checks them (cmd/kubelet/app/server.go calls it on the flags, then on
 * the file merged with the flags).
 *
 * The known set is kubelet 1.20.2's `utilfeature.DefaultMutableFeatureGate`: pkg/features/
 * kube_features.go, k8s.io/apiserver/pkg/features/kube_features.go and component-base's AllAlpha /
 * AllBeta. Its alpha and beta gates are exactly the list `kubelet --help` prints; the GA and
 * deprecated ones (hidden there) were each checked against the binary.
 *
 * tskubelet acts on no gate yet: a known gate is accepted and reported in the compiled config
 * (`KubeletConfig.featureGates`, `featureEnabled`), an unknown one is an error, as upstream.
 */

import { compareStrings } from '../util/compare.ts';

export type FeatureStage = 'Alpha' | 'Beta' | 'GA' | 'Deprecated';

export interface FeatureSpec {
  readonly default: boolean;
  readonly stage: FeatureStage;
  /** GA gates upstream refuses to set to anything but their default. */
  readonly lockToDefault?: true;
}

/** Every gate kubelet 1.20.2 knows, by name. */
export const KUBELET_1_20_FEATURE_GATES: Readonly<Record<string, FeatureSpec>> = Object.freeze({
  APIListChunking: { default: true, stage: 'Beta' },
  APIPriorityAndFairness: { default: true, stage: 'Beta' },
  APIResponseCompression: { default: true, stage: 'Beta' },
  APIServerIdentity: { default: false, stage: 'Alpha' },
  AdvancedAuditing: { default: true, stage: 'GA' },
  AllAlpha: { default: false, stage: 'Alpha' },
  AllBeta: { default: false, stage: 'Beta' },
  AllowInsecureBackendProxy: { default: true, stage: 'Beta' },
  AnyVolumeDataSource: { default: false, stage: 'Alpha' },
  AppArmor: { default: true, stage: 'Beta' },
  AttachVolumeLimit: { default: true, stage: 'GA', lockToDefault: true },
  BalanceAttachedNodeVolumes: { default: false, stage: 'Alpha' },
  BlockVolume: { default: true, stage: 'GA', lockToDefault: true },
  BoundServiceAccountTokenVolume: { default: false, stage: 'Alpha' },
  CPUManager: { default: true, stage: 'Beta' },
  CRIContainerLogRotation: { default: true, stage: 'Beta' },
  CSIBlockVolume: { default: true, stage: 'GA', lockToDefault: true },
  CSIDriverRegistry: { default: true, stage: 'GA', lockToDefault: true },
  CSIInlineVolume: { default: true, stage: 'Beta' },
  CSIMigration: { default: true, stage: 'Beta' },
  CSIMigrationAWS: { default: false, stage: 'Beta' },
  CSIMigrationAWSComplete: { default: false, stage: 'Alpha' },
  CSIMigrationAzureDisk: { default: false, stage: 'Beta' },
  CSIMigrationAzureDiskComplete: { default: false, stage: 'Alpha' },
  CSIMigrationAzureFile: { default: false, stage: 'Alpha' },
  CSIMigrationAzureFileComplete: { default: false, stage: 'Alpha' },
  CSIMigrationGCE: { default: false, stage: 'Beta' },
  CSIMigrationGCEComplete: { default: false, stage: 'Alpha' },
  CSIMigrationOpenStack: { default: false, stage: 'Beta' },
  CSIMigrationOpenStackComplete: { default: false, stage: 'Alpha' },
  CSIMigrationvSphere: { default: false, stage: 'Beta' },
  CSIMigrationvSphereComplete: { default: false, stage: 'Beta' },
  CSINodeInfo: { default: true, stage: 'GA', lockToDefault: true },
  CSIServiceAccountToken: { default: false, stage: 'Alpha' },
  CSIStorageCapacity: { default: false, stage: 'Alpha' },
  CSIVolumeFSGroupPolicy: { default: true, stage: 'Beta' },
  ConfigurableFSGroupPolicy: { default: true, stage: 'Beta' },
  CronJobControllerV2: { default: false, stage: 'Alpha' },
  CustomCPUCFSQuotaPeriod: { default: false, stage: 'Alpha' },
  DefaultPodTopologySpread: { default: true, stage: 'Beta' },
  DevicePlugins: { default: true, stage: 'Beta' },
  DisableAcceleratorUsageMetrics: { default: true, stage: 'Beta' },
  DownwardAPIHugePages: { default: false, stage: 'Alpha' },
  DryRun: { default: true, stage: 'GA' },
  DynamicKubeletConfig: { default: true, stage: 'Beta' },
  EfficientWatchResumption: { default: false, stage: 'Alpha' },
  EndpointSlice: { default: true, stage: 'Beta' },
  EndpointSliceNodeName: { default: false, stage: 'Alpha' },
  EndpointSliceProxying: { default: true, stage: 'Beta' },
  EndpointSliceTerminatingCondition: { default: false, stage: 'Alpha' },
  EphemeralContainers: { default: false, stage: 'Alpha' },
  EvenPodsSpread: { default: true, stage: 'GA', lockToDefault: true },
  ExecProbeTimeout: { default: true, stage: 'GA' },
  ExpandCSIVolumes: { default: true, stage: 'Beta' },
  ExpandInUsePersistentVolumes: { default: true, stage: 'Beta' },
  ExpandPersistentVolumes: { default: true, stage: 'Beta' },
  ExperimentalHostUserNamespaceDefaulting: { default: false, stage: 'Beta' },
  ExternalPolicyForExternalIP: { default: true, stage: 'GA', lockToDefault: true },
  GenericEphemeralVolume: { default: false, stage: 'Alpha' },
  GracefulNodeShutdown: { default: false, stage: 'Alpha' },
  HPAContainerMetrics: { default: false, stage: 'Alpha' },
  HPAScaleToZero: { default: false, stage: 'Alpha' },
  HugePageStorageMediumSize: { default: true, stage: 'Beta' },
  HyperVContainer: { default: false, stage: 'Deprecated' },
  IPv6DualStack: { default: false, stage: 'Alpha' },
  ImmutableEphemeralVolumes: { default: true, stage: 'Beta' },
  KubeletCredentialProviders: { default: false, stage: 'Alpha' },
  KubeletPodResources: { default: true, stage: 'Beta' },
  LegacyNodeRoleBehavior: { default: true, stage: 'Beta' },
  LocalStorageCapacityIsolation: { default: true, stage: 'Beta' },
  LocalStorageCapacityIsolationFSQuotaMonitoring: { default: false, stage: 'Alpha' },
  MixedProtocolLBService: { default: false, stage: 'Alpha' },
  NodeDisruptionExclusion: { default: true, stage: 'Beta' },
  NodeLease: { default: true, stage: 'GA', lockToDefault: true },
  NonPreemptingPriority: { default: true, stage: 'Beta' },
  PodDisruptionBudget: { default: true, stage: 'Beta' },
  PodOverhead: { default: true, stage: 'Beta' },
  ProcMountType: { default: false, stage: 'Alpha' },
  QOSReserved: { default: false, stage: 'Alpha' },
  RemainingItemCount: { default: true, stage: 'Beta' },
  RemoveSelfLink: { default: true, stage: 'Beta' },
  RootCAConfigMap: { default: true, stage: 'Beta' },
  RotateKubeletClientCertificate: { default: true, stage: 'GA', lockToDefault: true },
  RotateKubeletServerCertificate: { default: true, stage: 'Beta' },
  RunAsGroup: { default: true, stage: 'Beta' },
  RuntimeClass: { default: true, stage: 'GA', lockToDefault: true },
  SCTPSupport: { default: true, stage: 'GA', lockToDefault: true },
  SelectorIndex: { default: true, stage: 'GA', lockToDefault: true },
  ServerSideApply: { default: true, stage: 'Beta' },
  ServiceAccountIssuerDiscovery: { default: true, stage: 'Beta' },
  ServiceAppProtocol: { default: true, stage: 'GA', lockToDefault: true },
  ServiceLBNodePortControl: { default: false, stage: 'Alpha' },
  ServiceNodeExclusion: { default: true, stage: 'Beta' },
  ServiceTopology: { default: false, stage: 'Alpha' },
  SetHostnameAsFQDN: { default: true, stage: 'Beta' },
  SizeMemoryBackedVolumes: { default: false, stage: 'Alpha' },
  StartupProbe: { default: true, stage: 'GA', lockToDefault: true },
  StorageObjectInUseProtection: { default: true, stage: 'GA' },
  StorageVersionAPI: { default: false, stage: 'Alpha' },
  StorageVersionHash: { default: true, stage: 'Beta' },
  StreamingProxyRedirects: { default: true, stage: 'Deprecated' },
  SupportNodePidsLimit: { default: true, stage: 'GA', lockToDefault: true },
  SupportPodPidsLimit: { default: true, stage: 'GA', lockToDefault: true },
  Sysctls: { default: true, stage: 'Beta' },
  TTLAfterFinished: { default: false, stage: 'Alpha' },
  TokenRequest: { default: true, stage: 'GA', lockToDefault: true },
  TokenRequestProjection: { default: true, stage: 'GA', lockToDefault: true },
  TopologyManager: { default: true, stage: 'Beta' },
  ValidateProxyRedirects: { default: true, stage: 'Beta' },
  VolumePVCDataSource: { default: true, stage: 'GA', lockToDefault: true },
  VolumeSnapshotDataSource: { default: true, stage: 'GA', lockToDefault: true },
  VolumeSubpath: { default: true, stage: 'GA' },
  WarningHeaders: { default: true, stage: 'Beta' },
  WatchBookmark: { default: true, stage: 'GA', lockToDefault: true },
  WinDSR: { default: false, stage: 'Alpha' },
  WinOverlay: { default: true, stage: 'Beta' },
  WindowsEndpointSliceProxying: { default: false, stage: 'Alpha' },
  WindowsGMSA: { default: true, stage: 'GA', lockToDefault: true },
  WindowsRunAsUserName: { default: true, stage: 'GA', lockToDefault: true },
});

/** Upstream's "all alpha" and "all beta" switches: they set every gate of their stage not set explicitly. */
const ALL_OF_STAGE: Readonly<Record<string, FeatureStage>> = { AllAlpha: 'Alpha', AllBeta: 'Beta' };

/**
 * Checks the gates as given (file merged with flags) as upstream's SetFromMap does: an unknown
 * gate and a locked gate set away from its default are errors (upstream's words); setting a GA or
 * deprecated gate is a warning. Returns the state of every known gate (defaults, the AllAlpha /
 * AllBeta switches, then the explicit values).
 */
export function resolveFeatureGates(
  given: Readonly<Record<string, boolean>>,
  errors: string[],
  warnings: string[],
  /** Where a gate was set (`--feature-gates`, `featureGates`), to start its error with. */
  sourceOf: (name: string) => string = () => '',
): Record<string, boolean> {
  const fail = (name: string, message: string) => {
    const source = sourceOf(name);
    errors.push(source ? `${source}: ${message}` : message);
  };
  const enabled: Record<string, boolean> = {};
  for (const [name, spec] of Object.entries(KUBELET_1_20_FEATURE_GATES)) enabled[name] = spec.default;
  const explicit = new Set<string>();
  for (const [name, value] of Object.entries(given).sort(([a], [b]) => compareStrings(a, b))) {
    const spec = Object.hasOwn(KUBELET_1_20_FEATURE_GATES, name)
      ? KUBELET_1_20_FEATURE_GATES[name]
      : undefined;
    if (!spec) {
      fail(name, `unrecognized feature gate: ${name}`);
      continue;
    }
    if (spec.lockToDefault && spec.default !== value) {
      fail(name, `cannot set feature gate ${name} to ${value}, feature is locked to ${spec.default}`);
      continue;
    }
    explicit.add(name);
    enabled[name] = value;
    if (spec.stage === 'Deprecated') {
      warnings.push(
        `Setting deprecated feature gate ${name}=${value}. It will be removed in a future release.`,
      );
    } else if (spec.stage === 'GA') {
      warnings.push(`Setting GA feature gate ${name}=${value}. It will be removed in a future release.`);
    }
  }
  for (const [switchName, stage] of Object.entries(ALL_OF_STAGE)) {
    if (!explicit.has(switchName)) continue;
    for (const [name, spec] of Object.entries(KUBELET_1_20_FEATURE_GATES)) {
      if (spec.stage === stage && !explicit.has(name)) enabled[name] = given[switchName] === true;
    }
  }
  return enabled;
}

/** Whether a gate is on, given the gates as configured (`KubeletConfig.featureGates`). */
export function featureEnabled(given: Readonly<Record<string, boolean>>, name: string): boolean {
  return resolveFeatureGates(given, [], [])[name] === true;
}

/**
 * The file's gates with each gate given on the command line replacing the file's value of that
 * gate (upstream kubeletConfigFlagPrecedence adds back the file's gates the flags did not set),
 * checked (resolveFeatureGates). Returns the merged map as given.
 */
export function mergeFeatureGates(
  file: Readonly<Record<string, boolean>> | undefined,
  flags: Readonly<Record<string, boolean>> | undefined,
  errors: string[],
  warnings: string[],
): Record<string, boolean> {
  const merged: Record<string, boolean> = {};
  for (const [name, on] of [...Object.entries(file ?? {}), ...Object.entries(flags ?? {})]) {
    Object.defineProperty(merged, name, { value: on, enumerable: true, writable: true, configurable: true });
  }
  // Upstream names the gate only; say where it was set, as for every other setting.
  resolveFeatureGates(merged, errors, warnings, (name) =>
    flags && Object.hasOwn(flags, name) ? '--feature-gates' : 'featureGates',
  );
  return merged;
}
