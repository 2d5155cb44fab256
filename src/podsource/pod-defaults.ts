/**
 * Spec defaults a pod gets on its way in (upstream: the SetDefaults_* functions in
 * pkg/apis/core/v1/defaults.go plus the declarative `+default` markers, applied by the decoder).
 * The API server has already applied them to pods from the api source; static pods get them here.
 */
import type { Container, HTTPGetAction, LifecycleHandler, Pod, Probe, PullPolicy } from '../api/types.ts';
import {
  DEFAULT_PROBE_FAILURE_THRESHOLD,
  DEFAULT_PROBE_PERIOD_SECONDS,
  DEFAULT_PROBE_SUCCESS_THRESHOLD,
  DEFAULT_PROBE_TIMEOUT_SECONDS,
  DEFAULT_SA_TOKEN_EXPIRATION_SECONDS,
  DEFAULT_SCHEDULER_NAME,
  DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS,
  DEFAULT_TERMINATION_MESSAGE_PATH,
  DEFAULT_VOLUME_FILE_MODE,
} from '../config/defaults.ts';
import { isObject } from '../util/json.ts';

/**
 * Splits an image reference into its tag and digest (upstream parsers.ParseImageName): the tag
 * is what follows the last `:` after the last `/`; a reference with neither tag nor digest gets the
 * implicit tag `latest`.
 */
export function imageTagAndDigest(image: string): { tag: string; digest: string } {
  const at = image.indexOf('@');
  const digest = at >= 0 ? image.slice(at + 1) : '';
  const name = at >= 0 ? image.slice(0, at) : image;
  const colon = name.lastIndexOf(':');
  const tag = colon > name.lastIndexOf('/') ? name.slice(colon + 1) : '';
  return { tag: tag === '' && digest === '' ? 'latest' : tag, digest };
}

/** Upstream SetDefaults_Container: `Always` for `:latest` (or no tag and no digest), else `IfNotPresent`. */
export function defaultPullPolicy(image: string): PullPolicy {
  return imageTagAndDigest(image).tag === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultHttpGet(a: HTTPGetAction | undefined): void {
  if (!a) return;
  a.path ??= '/';
  if (a.path === '') a.path = '/';
  a.scheme ??= 'HTTP';
}

function defaultHandler(h: LifecycleHandler | undefined): void {
  if (h) defaultHttpGet(h.httpGet);
}

function defaultProbe(p: Probe | undefined): void {
  if (!p) return;
  // Upstream treats 0 as unset for these four (they are plain int32 fields there).
  if (!p.timeoutSeconds) p.timeoutSeconds = DEFAULT_PROBE_TIMEOUT_SECONDS;
  if (!p.periodSeconds) p.periodSeconds = DEFAULT_PROBE_PERIOD_SECONDS;
  if (!p.successThreshold) p.successThreshold = DEFAULT_PROBE_SUCCESS_THRESHOLD;
  if (!p.failureThreshold) p.failureThreshold = DEFAULT_PROBE_FAILURE_THRESHOLD;
  defaultHttpGet(p.httpGet);
}

function defaultContainer(c: Container, hostNetwork: boolean): void {
  if (!c.imagePullPolicy) c.imagePullPolicy = defaultPullPolicy(c.image ?? '');
  if (!c.terminationMessagePath) c.terminationMessagePath = DEFAULT_TERMINATION_MESSAGE_PATH;
  if (!c.terminationMessagePolicy) c.terminationMessagePolicy = 'File';
  for (const port of c.ports ?? []) {
    if (!port.protocol) port.protocol = 'TCP';
    // SetDefaults_Pod/defaultHostNetworkPorts: with host networking every port is a host port.
    if (hostNetwork && !port.hostPort) port.hostPort = port.containerPort;
  }
  // SetDefaults_Pod: limits stand in for missing requests, resource by resource.
  const res = c.resources;
  if (res?.limits) {
    res.requests ??= {};
    for (const [k, v] of Object.entries(res.limits)) {
      if (!Object.hasOwn(res.requests, k)) res.requests[k] = v;
    }
  }
  for (const env of c.env ?? []) {
    const fieldRef = env.valueFrom?.fieldRef;
    if (isObject(fieldRef) && fieldRef.apiVersion === undefined) fieldRef.apiVersion = 'v1';
  }
  defaultProbe(c.livenessProbe);
  defaultProbe(c.readinessProbe);
  defaultProbe(c.startupProbe);
  defaultHandler(c.lifecycle?.postStart);
  defaultHandler(c.lifecycle?.preStop);
}

const MODE_SOURCES = ['secret', 'configMap', 'downwardAPI', 'projected'] as const;

function defaultVolumes(pod: Pod): void {
  for (const vol of pod.spec.volumes ?? []) {
    // SetDefaults_Volume: a volume that names no source is an emptyDir.
    if (Object.keys(vol).every((k) => k === 'name' || vol[k] === undefined)) vol.emptyDir = {};
    if (vol.hostPath) vol.hostPath.type ??= '';
    for (const kind of MODE_SOURCES) {
      const src = vol[kind];
      if (isObject(src) && src.defaultMode === undefined) src.defaultMode = DEFAULT_VOLUME_FILE_MODE;
    }
    const projected = vol.projected;
    if (isObject(projected) && Array.isArray(projected.sources)) {
      for (const s of projected.sources as unknown[]) {
        if (isObject(s) && isObject(s.serviceAccountToken)) {
          s.serviceAccountToken.expirationSeconds ??= DEFAULT_SA_TOKEN_EXPIRATION_SECONDS;
        }
      }
    }
  }
}

/** Applies the upstream v1 Pod/PodSpec/Container/Probe/Volume defaults in place. Idempotent. */
export function setPodDefaults(pod: Pod): void {
  const spec = pod.spec;
  // SetDefaults_PodSpec
  if (!spec.dnsPolicy) spec.dnsPolicy = 'ClusterFirst';
  if (!spec.restartPolicy) spec.restartPolicy = 'Always';
  spec.securityContext ??= {};
  spec.terminationGracePeriodSeconds ??= DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS;
  if (!spec.schedulerName) spec.schedulerName = DEFAULT_SCHEDULER_NAME;
  // SetDefaults_Pod
  spec.enableServiceLinks ??= true;
  const hostNetwork = spec.hostNetwork === true;
  for (const c of spec.initContainers ?? []) defaultContainer(c, hostNetwork);
  for (const c of spec.containers) defaultContainer(c, hostNetwork);
  defaultVolumes(pod);
}
