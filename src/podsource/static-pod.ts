/**
 * Static pods: turning a parsed manifest (file or HTTP) into the pod the kubelet runs. Upstream:
 * tryDecodeSinglePod + applyDefaults in pkg/kubelet/config/common.go.
 *
 * Steps, in upstream order: decode (type checks, here {@link checkPodShape}) → v1 spec defaults →
 * UID (unless the manifest sets one) → name suffix, namespace, node, annotations, toleration,
 * phase → validation. Any failure throws `KubeletError('InvalidArgument')` whose message names the
 * field(s), e.g. `invalid pod: spec.containers[1].image: Required value`.
 */
import { createHash } from 'node:crypto';
import { toKubeletPod, type KubeletPod, type Pod, type Toleration } from '../api/types.ts';
import { ANNOTATION_CONFIG_HASH, ANNOTATION_CONFIG_SOURCE } from '../config/defaults.ts';
import { KubeletError } from '../util/errors.ts';
import { formatFieldErrors, type FieldError } from './field-errors.ts';
import { canonicalJson, isObject, stripNulls, type JsonObject } from '../util/json.ts';
import { setPodDefaults } from './pod-defaults.ts';
import { checkPodShape } from './pod-shape.ts';
import { validatePod } from './pod-validation.ts';

export type StaticPodSource = 'file' | 'http';

export interface StaticPodOptions {
  nodeName: string;
  source: StaticPodSource;
  /** The manifest's file path (file source) or URL (http source); part of the UID. */
  origin: string;
}

/** Upstream generatePodName: `<name>-<lowercased node name>`. */
export function staticPodName(name: string, nodeName: string): string {
  return `${name}-${nodeName.toLowerCase()}`;
}

/**
 * The UID of a static pod without `metadata.uid`: hex MD5 over
 * `canonicalJson(pod) + "host:" + nodeName + ("file:" + path | "url:" + url)`, where `pod` is the
 * manifest after type checks and v1 spec defaults and before the static-pod fields (name suffix,
 * annotations...) are set. canonicalJson sorts object keys at every depth, so key order and
 * formatting in the manifest never change the UID; any change of content, node or origin does.
 *
 * Upstream hashes the decoded Go struct (DeepHashObject) and, for the http source, leaves the node
 * out. Our values can never equal upstream's anyway, so we include the node for both sources, which
 * makes a UID unique across nodes sharing one manifest URL.
 */
export function staticPodUID(pod: Pod, opts: StaticPodOptions): string {
  const hash = createHash('md5');
  hash.update(canonicalJson(pod));
  hash.update(`host:${opts.nodeName}`);
  hash.update(opts.source === 'file' ? `file:${opts.origin}` : `url:${opts.origin}`);
  return hash.digest('hex');
}

function invalid(opts: StaticPodOptions, message: string): KubeletError {
  return new KubeletError('InvalidArgument', `decode static pod from ${opts.origin}`, message);
}

function invalidFields(opts: StaticPodOptions, errs: FieldError[]): KubeletError {
  return invalid(opts, `invalid pod: ${formatFieldErrors(errs)}`);
}

/** Upstream AddOrUpdateTolerationInPod for the toleration every file pod gets. */
function tolerateAllNoExecute(pod: Pod): void {
  const wanted: Toleration = { operator: 'Exists', effect: 'NoExecute' };
  const list = (pod.spec.tolerations ??= []);
  const present = list.some(
    (t) =>
      !t.key &&
      t.operator === 'Exists' &&
      t.effect === 'NoExecute' &&
      !t.value &&
      t.tolerationSeconds === undefined,
  );
  if (!present) list.push(wanted);
}

/**
 * Checks that `raw` is a `v1` `Pod` object and turns it into the defaulted, validated static pod,
 * identity (name, UID, namespace) included.
 * Never mutates `raw`. Throws `KubeletError('InvalidArgument')` naming the offending field(s).
 */
export function defaultStaticPod(raw: unknown, opts: StaticPodOptions): KubeletPod {
  if (!isObject(raw)) throw invalid(opts, 'a manifest must be a YAML or JSON object');
  const obj = stripNulls(raw) as JsonObject;
  if (obj.kind !== 'Pod') {
    throw invalid(opts, `kind: expected "Pod", got ${JSON.stringify(obj.kind ?? '')} (one Pod per manifest)`);
  }
  if (obj.apiVersion !== 'v1') {
    throw invalid(opts, `apiVersion: expected "v1", got ${JSON.stringify(obj.apiVersion ?? '')}`);
  }
  const shapeErrs: FieldError[] = [];
  checkPodShape(obj, shapeErrs);
  if (shapeErrs.length > 0) throw invalidFields(opts, shapeErrs);
  const pod = obj as unknown as Pod;
  pod.spec.containers ??= [];
  if (!pod.metadata.name)
    throw invalid(opts, 'invalid pod: metadata.name: Required value: name is needed for the pod');

  setPodDefaults(pod);

  if (!pod.metadata.uid) pod.metadata.uid = staticPodUID(pod, opts);
  const uid = pod.metadata.uid;
  pod.metadata.name = staticPodName(pod.metadata.name, opts.nodeName);
  if (!pod.metadata.namespace) pod.metadata.namespace = 'default';
  pod.spec.nodeName = opts.nodeName;
  pod.metadata.annotations = {
    ...pod.metadata.annotations,
    [ANNOTATION_CONFIG_HASH]: uid,
    [ANNOTATION_CONFIG_SOURCE]: opts.source,
  };
  // Upstream adds this to file pods only, so node problems (NoExecute taints) never evict them.
  if (opts.source === 'file') tolerateAllNoExecute(pod);
  pod.status = { ...pod.status, phase: 'Pending' };

  const errs = validatePod(pod);
  if (errs.length > 0) throw invalidFields(opts, errs);
  // Name, UID and namespace were all set above; the check only turns that into the type.
  return toKubeletPod(pod, `decode static pod from ${opts.origin}`);
}
