/**
 * Seccomp and AppArmor profiles of a pod's containers as CRI `SecurityProfile`s (upstream
 * kuberuntime getSeccompProfile / getAppArmorProfile and pkg/security/apparmor GetProfile), and the
 * sysctl name normalisation the kubelet applies before a sandbox is created.
 *
 * Pure functions: no file is read here. A profile that cannot be expressed (Localhost without a
 * profile name, a path leaving the profile root, an unknown type) is a `KubeletError('InvalidArgument')`,
 * which the runtime manager reports as CreateContainerConfigError.
 */
import { join } from 'node:path';
import type { Container, Pod } from '../../api/types.ts';
import {
  APPARMOR_CONTAINER_ANNOTATION_KEY_PREFIX,
  SECCOMP_CONTAINER_ANNOTATION_KEY_PREFIX,
  SECCOMP_POD_ANNOTATION_KEY,
  SECCOMP_PROFILE_DIR_NAME,
} from '../../config/defaults.ts';
import { KubeletError } from '../../util/errors.ts';
import type { SecurityProfile } from '../cri/index.ts';

/** The API's seccompProfile / appArmorProfile: `{type, localhostProfile}`. */
export interface ApiSecurityProfile {
  type: string;
  localhostProfile?: string;
}

// Deprecated annotation values (k8s.io/api/core/v1 annotation_key_constants.go).
const ANNOTATION_RUNTIME_DEFAULT = 'runtime/default'; // SeccompProfileRuntimeDefault, DeprecatedAppArmorBetaProfileRuntimeDefault
const ANNOTATION_DOCKER_DEFAULT = 'docker/default'; // DeprecatedSeccompProfileDockerDefault
const ANNOTATION_UNCONFINED = 'unconfined'; // SeccompProfileNameUnconfined, DeprecatedAppArmorBetaProfileNameUnconfined
const ANNOTATION_LOCALHOST_PREFIX = 'localhost/'; // SeccompLocalhostProfileNamePrefix, DeprecatedAppArmorBetaProfileNamePrefix

export interface SeccompOptions {
  /** Localhost profiles are paths below this directory (upstream seccompProfileRoot). */
  profileRoot: string;
  /** KubeletConfiguration `seccompDefault`: RuntimeDefault rather than Unconfined when nothing is set. */
  defaultToRuntimeDefault: boolean;
}

/** Upstream seccompProfileRoot: `<rootDir>/seccomp`. */
export function seccompProfileRoot(rootDir: string): string {
  return join(rootDir, SECCOMP_PROFILE_DIR_NAME);
}

const RUNTIME_DEFAULT: SecurityProfile = { profileType: 'RuntimeDefault' };
const UNCONFINED: SecurityProfile = { profileType: 'Unconfined' };

function invalid(op: string, message: string): KubeletError {
  return new KubeletError('InvalidArgument', op, message);
}

/**
 * API validation's validateLocalDescendingPath, which upstream applies to every pod before the
 * kubelet sees it; static pods reach us without it, so it is checked here: a Localhost profile
 * must stay below the profile root.
 */
function localhostPath(root: string, profile: string, what: string): string {
  if (profile.startsWith('/')) throw invalid(what, `${JSON.stringify(profile)}: must be a relative path`);
  if (profile.split('/').includes('..')) {
    throw invalid(what, `${JSON.stringify(profile)}: must not contain '..'`);
  }
  return join(root, profile);
}

/**
 * A profile field's type as the CRI profile: RuntimeDefault and Unconfined as they are, Localhost
 * by `localhost` (seccomp wants a file below the root, AppArmor a loaded profile's name), any other
 * type refused with `unknown`'s message.
 */
function profileOfType(
  p: ApiSecurityProfile,
  localhost: (name: string | undefined) => SecurityProfile,
  unknown: (type: string) => KubeletError,
): SecurityProfile {
  switch (p.type) {
    case 'RuntimeDefault':
      return RUNTIME_DEFAULT;
    case 'Unconfined':
      return UNCONFINED;
    case 'Localhost':
      return localhost(p.localhostProfile);
    default:
      throw unknown(p.type);
  }
}

/** Upstream fieldSeccompProfile for a field that is set. */
function fromSeccompField(p: ApiSecurityProfile, opts: SeccompOptions, what: string): SecurityProfile {
  return profileOfType(
    p,
    (name) => {
      if (!name) throw invalid(what, 'localhostProfile must be set if seccompProfile type is Localhost.');
      return { profileType: 'Localhost', localhostRef: localhostPath(opts.profileRoot, name, what) };
    },
    // Upstream falls back to Unconfined; API validation never lets such a value through, and a
    // static pod asking for an unknown profile should not silently run without one.
    (type) => invalid(what, `unsupported seccompProfile type ${JSON.stringify(type)}`),
  );
}

/** The deprecated annotation form (upstream annotationProfile, values as API validation allows). */
function fromSeccompAnnotation(value: string, opts: SeccompOptions, what: string): SecurityProfile {
  if (value === ANNOTATION_RUNTIME_DEFAULT || value === ANNOTATION_DOCKER_DEFAULT) return RUNTIME_DEFAULT;
  if (value === ANNOTATION_UNCONFINED) return UNCONFINED;
  if (value.startsWith(ANNOTATION_LOCALHOST_PREFIX)) {
    const name = value.slice(ANNOTATION_LOCALHOST_PREFIX.length);
    if (name === '') throw invalid(what, 'localhost profile name must not be empty');
    return { profileType: 'Localhost', localhostRef: localhostPath(opts.profileRoot, name, what) };
  }
  throw invalid(
    what,
    `${JSON.stringify(value)} is not a valid seccomp profile (want runtime/default, docker/default, unconfined or localhost/<path>)`,
  );
}

/**
 * The seccomp profile of one container, in upstream's order (1.19–1.26, when fields and the
 * deprecated annotations coexisted): container field, container annotation, pod field, pod
 * annotation; nothing set gives RuntimeDefault with `seccompDefault`, else Unconfined.
 * Privileged containers get the profile too; the runtime ignores it for them (as upstream).
 */
export function containerSeccompProfile(
  pod: Pod,
  container: Container,
  opts: SeccompOptions,
): SecurityProfile {
  const what = `seccomp profile of container ${container.name}`;
  const annotations = pod.metadata.annotations ?? {};
  const containerField = container.securityContext?.seccompProfile;
  if (containerField) return fromSeccompField(containerField, opts, what);
  const containerAnnotation = annotations[SECCOMP_CONTAINER_ANNOTATION_KEY_PREFIX + container.name];
  if (containerAnnotation !== undefined) return fromSeccompAnnotation(containerAnnotation, opts, what);
  const podField = pod.spec.securityContext?.seccompProfile;
  if (podField) return fromSeccompField(podField, opts, what);
  const podAnnotation = annotations[SECCOMP_POD_ANNOTATION_KEY];
  if (podAnnotation !== undefined) return fromSeccompAnnotation(podAnnotation, opts, what);
  return opts.defaultToRuntimeDefault ? RUNTIME_DEFAULT : UNCONFINED;
}

/**
 * The sandbox (pause) container always runs with the runtime's default profile, whatever the pod
 * asks for (upstream since 1.19, kubernetes#90949): the pod's profile is for its containers.
 */
export function sandboxSeccompProfile(): SecurityProfile {
  return RUNTIME_DEFAULT;
}

/**
 * `securityContext.appArmorProfile` (pod or container). Not in our typed Pod (the 1.20 API has no
 * such field; newer servers and static pods may carry it), so it is read and shape-checked here.
 */
function appArmorField(securityContext: object | undefined): ApiSecurityProfile | undefined {
  if (securityContext === undefined || !('appArmorProfile' in securityContext)) return undefined;
  const v: unknown = securityContext.appArmorProfile;
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || !('type' in v) || typeof v.type !== 'string') {
    throw invalid('appArmorProfile', 'must be an object with a string "type"');
  }
  const local = 'localhostProfile' in v ? v.localhostProfile : undefined;
  if (local !== undefined && local !== null && typeof local !== 'string') {
    throw invalid('appArmorProfile', '"localhostProfile" must be a string');
  }
  return typeof local === 'string' ? { type: v.type, localhostProfile: local } : { type: v.type };
}

/** Upstream getProfileFromPodAnnotations: an unrecognised value means no profile (as upstream). */
function appArmorFromAnnotation(value: string): ApiSecurityProfile | undefined {
  if (value === ANNOTATION_RUNTIME_DEFAULT) return { type: 'RuntimeDefault' };
  if (value === ANNOTATION_UNCONFINED) return { type: 'Unconfined' };
  if (value.startsWith(ANNOTATION_LOCALHOST_PREFIX)) {
    return { type: 'Localhost', localhostProfile: value.slice(ANNOTATION_LOCALHOST_PREFIX.length) };
  }
  return undefined;
}

/**
 * Upstream apparmor.GetProfile: container field, then the container's (deprecated) annotation, then
 * the pod field. Undefined: nothing asked for (the runtime applies its default when AppArmor is on).
 */
export function appArmorProfileOf(pod: Pod, container: Container): ApiSecurityProfile | undefined {
  const fromContainer = appArmorField(container.securityContext);
  if (fromContainer) return fromContainer;
  const annotation = pod.metadata.annotations?.[APPARMOR_CONTAINER_ANNOTATION_KEY_PREFIX + container.name];
  const fromAnnotation = annotation === undefined ? undefined : appArmorFromAnnotation(annotation);
  if (fromAnnotation) return fromAnnotation;
  return appArmorField(pod.spec.securityContext);
}

/**
 * Upstream isRequired: the pod asks for an AppArmor profile other than unconfined anywhere (pod
 * field, any container's field, any container annotation). Upstream returns on the first
 * annotation in Go's random map order; here any non-unconfined annotation counts.
 */
export function appArmorRequired(pod: Pod): boolean {
  const confined = (p: ApiSecurityProfile | undefined) => p !== undefined && p.type !== 'Unconfined';
  if (confined(appArmorField(pod.spec.securityContext))) return true;
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  if (containers.some((c) => confined(appArmorField(c.securityContext)))) return true;
  return Object.entries(pod.metadata.annotations ?? {}).some(
    ([k, v]) => k.startsWith(APPARMOR_CONTAINER_ANNOTATION_KEY_PREFIX) && v !== ANNOTATION_UNCONFINED,
  );
}

/**
 * Upstream getAppArmorProfile: the CRI profile for a container, undefined when none is asked for.
 * Localhost refers to a loaded profile by name (not a path).
 */
export function containerAppArmorProfile(pod: Pod, container: Container): SecurityProfile | undefined {
  const p = appArmorProfileOf(pod, container);
  if (!p) return undefined;
  const what = `AppArmor profile of container ${container.name}`;
  return profileOfType(
    p,
    (name) => {
      if (name === undefined || name.trim() === '')
        throw invalid(what, 'missing localhost apparmor profile name');
      return { profileType: 'Localhost', localhostRef: name };
    },
    (type) => invalid(what, `unknown apparmor profile type: ${JSON.stringify(type)}`),
  );
}
