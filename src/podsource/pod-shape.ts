/**
 * The decode step: checks that every field tskubelet types in `src/api/types.ts` has the JSON type
 * it claims (upstream gets this from Go's JSON decoder, which rejects e.g. a string containerPort).
 * Fields we do not type are carried through untouched, as upstream's decoder ignores unknown fields.
 *
 * Quantities (resources, overhead, emptyDir.sizeLimit) may be written as YAML numbers (`cpu: 1`);
 * they are normalized to strings in place, then checked against the quantity grammar.
 */
import { child, index, type FieldError } from './field-errors.ts';
import { isObject, type JsonObject } from '../util/json.ts';

type Check = (v: unknown, path: string, errs: FieldError[]) => void;

const typeError = (path: string, value: unknown, detail: string): FieldError => ({
  path,
  type: 'TypeInvalid',
  value,
  detail,
});

const str: Check = (v, p, e) => {
  if (typeof v !== 'string') e.push(typeError(p, v, 'must be a string'));
};
const int: Check = (v, p, e) => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) e.push(typeError(p, v, 'must be an integer'));
};
const bool: Check = (v, p, e) => {
  if (typeof v !== 'boolean') e.push(typeError(p, v, 'must be a boolean'));
};
const intOrString: Check = (v, p, e) => {
  if (typeof v === 'string') return;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) {
    e.push(typeError(p, v, 'must be an integer or a string'));
  }
};
const anyObject: Check = (v, p, e) => {
  if (!isObject(v)) e.push(typeError(p, v, 'must be an object'));
};
const anyList: Check = (v, p, e) => {
  if (!Array.isArray(v)) e.push(typeError(p, v, 'must be a list'));
};

function listOf(item: Check): Check {
  return (v, p, e) => {
    if (!Array.isArray(v)) {
      e.push(typeError(p, v, 'must be a list'));
      return;
    }
    v.forEach((x, i) => item(x, index(p, i), e));
  };
}

/**
 * An object with these fields; `required` names the fields src/api/types.ts declares non-optional,
 * which the kubelet reads without a fallback (Go's decoder would give them zero values; a missing
 * one here is refused instead, as validation would refuse most of them anyway).
 */
function object(fields: Record<string, Check>, required: readonly string[] = []): Check {
  return (v, p, e) => {
    if (!isObject(v)) {
      e.push(typeError(p, v, 'must be an object'));
      return;
    }
    for (const k of required) {
      if (v[k] === undefined || v[k] === null) e.push({ path: child(p, k), type: 'Required' });
    }
    for (const [k, check] of Object.entries(fields)) {
      // null is "not set", as for Go's decoder (static pods have theirs stripped already).
      if (v[k] !== undefined && v[k] !== null) check(v[k], child(p, k), e);
    }
  };
}

const stringMap: Check = (v, p, e) => {
  if (!isObject(v)) {
    e.push(typeError(p, v, 'must be an object'));
    return;
  }
  for (const [k, x] of Object.entries(v)) str(x, child(p, k), e);
};

/** Kubernetes resource.Quantity grammar (sign, digits, optional fraction, one suffix). */
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** Checks a quantity held at `holder[key]`, turning a YAML number into its string form. */
function quantityAt(holder: JsonObject, key: string, p: string, e: FieldError[]): void {
  const v = holder[key];
  if (typeof v === 'number' && Number.isFinite(v)) {
    holder[key] = String(v);
    return;
  }
  if (typeof v !== 'string' || !QUANTITY.test(v)) {
    e.push(typeError(p, v, 'quantities must match the regular expression ' + QUANTITY.source));
  }
}

const quantityMap: Check = (v, p, e) => {
  if (!isObject(v)) {
    e.push(typeError(p, v, 'must be an object'));
    return;
  }
  for (const k of Object.keys(v)) quantityAt(v, k, child(p, k), e);
};

const nameValue = object({ name: str, value: str }, ['name', 'value']);
const dnsOption = object({ name: str, value: str }, ['name']);

const execAction = object({ command: listOf(str) });
const httpGetAction = object(
  {
    path: str,
    port: intOrString,
    host: str,
    scheme: str,
    httpHeaders: listOf(nameValue),
  },
  ['port'],
);
const tcpSocketAction = object({ port: intOrString, host: str }, ['port']);

const probe = object({
  exec: execAction,
  httpGet: httpGetAction,
  tcpSocket: tcpSocketAction,
  grpc: object({ port: int, service: str }, ['port']),
  initialDelaySeconds: int,
  timeoutSeconds: int,
  periodSeconds: int,
  successThreshold: int,
  failureThreshold: int,
  terminationGracePeriodSeconds: int,
});

const lifecycleHandler = object({
  exec: execAction,
  httpGet: httpGetAction,
  tcpSocket: tcpSocketAction,
  sleep: object({ seconds: int }, ['seconds']),
});

const seccompProfile = object({ type: str, localhostProfile: str }, ['type']);

const containerSecurityContext = object({
  privileged: bool,
  runAsUser: int,
  runAsGroup: int,
  runAsNonRoot: bool,
  readOnlyRootFilesystem: bool,
  allowPrivilegeEscalation: bool,
  capabilities: object({ add: listOf(str), drop: listOf(str) }),
  procMount: str,
  seccompProfile,
});

const container = object(
  {
    name: str,
    image: str,
    command: listOf(str),
    args: listOf(str),
    workingDir: str,
    ports: listOf(
      object({ name: str, hostPort: int, containerPort: int, protocol: str, hostIP: str }, ['containerPort']),
    ),
    env: listOf(object({ name: str, value: str, valueFrom: anyObject }, ['name'])),
    envFrom: anyList,
    resources: object({ limits: quantityMap, requests: quantityMap }),
    volumeMounts: listOf(
      object(
        {
          name: str,
          mountPath: str,
          readOnly: bool,
          subPath: str,
          subPathExpr: str,
          mountPropagation: str,
        },
        ['name', 'mountPath'],
      ),
    ),
    volumeDevices: listOf(object({ name: str, devicePath: str }, ['name', 'devicePath'])),
    livenessProbe: probe,
    readinessProbe: probe,
    startupProbe: probe,
    lifecycle: object({ postStart: lifecycleHandler, preStop: lifecycleHandler }),
    terminationMessagePath: str,
    terminationMessagePolicy: str,
    imagePullPolicy: str,
    securityContext: containerSecurityContext,
    stdin: bool,
    stdinOnce: bool,
    tty: bool,
    restartPolicy: str,
  },
  ['name'],
);

const volume: Check = (v, p, e) => {
  object(
    {
      name: str,
      emptyDir: object({ medium: str }),
      hostPath: object({ path: str, type: str }, ['path']),
    },
    ['name'],
  )(v, p, e);
  if (isObject(v) && isObject(v.emptyDir) && v.emptyDir.sizeLimit !== undefined) {
    quantityAt(v.emptyDir, 'sizeLimit', child(child(p, 'emptyDir'), 'sizeLimit'), e);
  }
};

const nodeSelectorRequirement = object({ key: str, operator: str, values: listOf(str) }, ['key', 'operator']);

const affinity = object({
  nodeAffinity: object({
    requiredDuringSchedulingIgnoredDuringExecution: object({
      nodeSelectorTerms: listOf(
        object({
          matchExpressions: listOf(nodeSelectorRequirement),
          matchFields: listOf(nodeSelectorRequirement),
        }),
      ),
    }),
    preferredDuringSchedulingIgnoredDuringExecution: anyList,
  }),
});

const podSpec = object(
  {
    containers: listOf(container),
    initContainers: listOf(container),
    restartPolicy: str,
    terminationGracePeriodSeconds: int,
    activeDeadlineSeconds: int,
    dnsPolicy: str,
    dnsConfig: object({
      nameservers: listOf(str),
      searches: listOf(str),
      options: listOf(dnsOption),
    }),
    nodeSelector: stringMap,
    nodeName: str,
    serviceAccountName: str,
    serviceAccount: str,
    automountServiceAccountToken: bool,
    hostNetwork: bool,
    hostPID: bool,
    hostIPC: bool,
    shareProcessNamespace: bool,
    securityContext: object({
      runAsUser: int,
      runAsGroup: int,
      runAsNonRoot: bool,
      supplementalGroups: listOf(int),
      fsGroup: int,
      sysctls: listOf(nameValue),
      seccompProfile,
    }),
    imagePullSecrets: listOf(object({ name: str }, ['name'])),
    hostname: str,
    subdomain: str,
    schedulerName: str,
    tolerations: listOf(object({ key: str, operator: str, value: str, effect: str, tolerationSeconds: int })),
    hostAliases: listOf(object({ ip: str, hostnames: listOf(str) }, ['ip'])),
    priority: int,
    priorityClassName: str,
    enableServiceLinks: bool,
    preemptionPolicy: str,
    volumes: listOf(volume),
    runtimeClassName: str,
    overhead: quantityMap,
    readinessGates: listOf(object({ conditionType: str }, ['conditionType'])),
    affinity,
  },
  ['containers'],
);

const objectMeta = object({
  name: str,
  generateName: str,
  namespace: str,
  uid: str,
  resourceVersion: str,
  generation: int,
  creationTimestamp: str,
  deletionTimestamp: str,
  deletionGracePeriodSeconds: int,
  labels: stringMap,
  annotations: stringMap,
  ownerReferences: listOf(
    object({ apiVersion: str, kind: str, name: str, uid: str, controller: bool }, [
      'apiVersion',
      'kind',
      'name',
      'uid',
    ]),
  ),
  finalizers: listOf(str),
});

const containerState = object({
  waiting: object({ reason: str, message: str }),
  running: object({ startedAt: str }),
  terminated: object(
    {
      exitCode: int,
      signal: int,
      reason: str,
      message: str,
      startedAt: str,
      finishedAt: str,
      containerID: str,
    },
    ['exitCode'],
  ),
});

const containerStatus = object(
  {
    name: str,
    state: containerState,
    lastState: containerState,
    ready: bool,
    restartCount: int,
    image: str,
    imageID: str,
    containerID: str,
    started: bool,
  },
  ['name', 'state', 'lastState', 'ready', 'restartCount', 'image', 'imageID'],
);

const podStatus = object({
  phase: str,
  conditions: listOf(
    object(
      {
        type: str,
        status: str,
        lastProbeTime: str,
        lastTransitionTime: str,
        reason: str,
        message: str,
      },
      ['type', 'status'],
    ),
  ),
  message: str,
  reason: str,
  hostIP: str,
  podIP: str,
  podIPs: listOf(object({ ip: str }, ['ip'])),
  startTime: str,
  initContainerStatuses: listOf(containerStatus),
  containerStatuses: listOf(containerStatus),
  qosClass: str,
});

/**
 * Type-checks a parsed pod object (a null field counts as absent). Appends one error per mistyped
 * field; normalizes numeric quantities to strings in place. `metadata` and `spec` are created when
 * absent so later steps can assume them.
 */
export function checkPodShape(pod: JsonObject, errs: FieldError[]): void {
  if (pod.metadata === undefined || pod.metadata === null) pod.metadata = {};
  if (pod.spec === undefined || pod.spec === null) pod.spec = {};
  for (const k of ['apiVersion', 'kind'] as const)
    if (pod[k] !== undefined && pod[k] !== null) str(pod[k], k, errs);
  objectMeta(pod.metadata, 'metadata', errs);
  podSpec(pod.spec, 'spec', errs);
  if (pod.status !== undefined && pod.status !== null) podStatus(pod.status, 'status', errs);
}
