/**
 * KubeletConfiguration: file loading, upstream defaulting, validation, and the compiled,
 * frozen `KubeletConfig` every other module reads. The settings are rows of one table
 * (`fields.ts`); docs/config-fields.md says how to add one.
 */
export {
  compileConfig,
  decodeKubeletConfiguration,
  loadConfigFile,
  DEFAULT_LOG_FORMAT,
  DEFAULT_RUN_ONCE_TIMEOUT_MS,
  KUBELET_CONFIG_API_VERSION,
  KUBELET_CONFIG_KIND,
  TAINT_EFFECTS,
} from './kubelet-config.ts';
export type {
  ChangeDetectionStrategy,
  CompileOptions,
  CompiledConfig,
  DecodedConfigFile,
  FlagValues,
  KubeletConfig,
  LogFormat,
  RawKubeletConfiguration,
  RawTaint,
  Taint,
  TaintEffect,
} from './kubelet-config.ts';
export { ALL_FIELDS, KUBELET_FIELDS } from './fields.ts';
export { SERVER_FIELDS } from './server-fields.ts';
export { toKubeletConfiguration } from './configz.ts';
export { NOT_IMPLEMENTED } from './not-implemented.ts';
export { mergeConfigDropIns } from './drop-in.ts';
export { KUBELET_1_20_FEATURE_GATES, featureEnabled } from './feature-gates.ts';
export type { FieldKind, FieldSpec, FlagSpec, KindValues } from './fields.ts';
export type { ServerFlagValues } from './raw.ts';
export type { AuthorizationMode, ServerSettings, TlsVersion } from './server-config.ts';
export { formatGoDuration, parseGoDuration, tryParseGoDuration } from './duration.ts';
export type { DurationParseResult } from './duration.ts';
export { parseConsoleAddress, isLoopbackIP, type ConsoleAddress } from './console-address.ts';
