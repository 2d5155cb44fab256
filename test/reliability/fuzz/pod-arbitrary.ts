/**
 * Valid pods, as plain JSON objects (what a manifest parser or the API client hands the kubelet):
 * every field tskubelet reads (src/api/types.ts) plus the volume sources, env references and status
 * it carries, with values that pass upstream validation by construction (unique container, port,
 * volume and mount names, one handler per probe, mounts that name a volume…). The corruptions in
 * corrupt.ts start from these, so each broken input has exactly one thing wrong with it.
 */
import fc from 'fast-check';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObj = { [k: string]: Json };

const ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** An RFC 1123 label of 1..max characters. */
export function dnsLabel(max = 20): fc.Arbitrary<string> {
  const ch = fc.constantFrom(...ALNUM);
  return fc
    .tuple(ch, fc.array(fc.oneof(ch, fc.constant('-')), { maxLength: Math.max(0, max - 2) }), ch)
    .map(([a, mid, z]) => (max === 1 ? a : `${a}${mid.join('')}${z}`));
}

const labelKey = fc.oneof(
  dnsLabel(12),
  fc.tuple(dnsLabel(8), dnsLabel(8)).map(([p, n]) => `${p}.io/${n}`),
);
const labelValue = fc.oneof(fc.constant(''), dnsLabel(16));
const anyText = fc.string({ maxLength: 24 });

function uniqueNames(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${i}`);
}

/** Drops keys whose value is undefined (optional fields left out). */
function compact(o: object): JsonObj {
  const out: JsonObj = {};
  // Everything generated here is JSON (fast-check's records are plain objects of JSON values).
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v as Json;
  return out;
}

function opt<T>(a: fc.Arbitrary<T>, freq = 0.5): fc.Arbitrary<T | undefined> {
  return fc.option(a, { nil: undefined, freq: Math.round(1 / (1 - freq)) });
}

const quantity = fc.oneof(
  fc.constantFrom('100m', '1', '250m', '2', '0.5'),
  fc.integer({ min: 1, max: 4096 }).map((n) => `${n}Mi`),
  fc.integer({ min: 1, max: 8 }),
);

const image = fc.constantFrom(
  'busybox:1.29',
  'docker.io/library/busybox:1.29',
  'registry.local:5000/team/app:v2',
  'k8s.gcr.io/pause:3.2',
  'nginx',
  'app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
);

const execAction = fc.record({ command: fc.array(anyText, { minLength: 1, maxLength: 3 }) });
const httpGet = fc
  .record({
    path: opt(fc.constantFrom('/', '/healthz', '/ready?x=1')),
    port: fc.oneof(fc.integer({ min: 1, max: 65535 }), fc.constantFrom('http', 'metrics')),
    host: opt(fc.constantFrom('127.0.0.1', 'localhost')),
    scheme: opt(fc.constantFrom('HTTP', 'HTTPS')),
    httpHeaders: opt(
      fc.array(fc.record({ name: fc.constantFrom('X-A', 'Accept'), value: anyText }), { maxLength: 2 }),
    ),
  })
  .map(compact);
const tcpSocket = fc.record({ port: fc.oneof(fc.integer({ min: 1, max: 65535 }), fc.constant('http')) });
const grpc = fc.record({ port: fc.integer({ min: 1, max: 65535 }) });

function probe(kind: 'liveness' | 'readiness' | 'startup'): fc.Arbitrary<JsonObj> {
  const handler = fc.oneof(
    execAction.map((exec) => ({ exec })),
    httpGet.map((h) => ({ httpGet: h })),
    tcpSocket.map((t) => ({ tcpSocket: t })),
    grpc.map((g) => ({ grpc: g })),
  );
  return fc
    .tuple(
      handler,
      fc.record(
        {
          initialDelaySeconds: fc.integer({ min: 0, max: 60 }),
          timeoutSeconds: fc.integer({ min: 1, max: 10 }),
          periodSeconds: fc.integer({ min: 1, max: 30 }),
          successThreshold: kind === 'readiness' ? fc.integer({ min: 1, max: 3 }) : fc.constant(1),
          failureThreshold: fc.integer({ min: 1, max: 5 }),
        },
        { requiredKeys: [] },
      ),
      kind === 'readiness' ? fc.constant(undefined) : opt(fc.integer({ min: 1, max: 60 }), 0.2),
    )
    .map(([h, t, grace]) => compact({ ...h, ...t, terminationGracePeriodSeconds: grace }));
}

const lifecycleHandler = fc.oneof(
  execAction.map((exec) => ({ exec })),
  httpGet.map((h) => ({ httpGet: h })),
  tcpSocket.map((t) => ({ tcpSocket: t })),
  fc.record({ sleep: fc.record({ seconds: fc.integer({ min: 1, max: 5 }) }) }),
);

const envName = fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/);
const valueFrom = fc.oneof(
  fc.record({
    fieldRef: fc.record({ fieldPath: fc.constantFrom('metadata.name', 'status.podIP', 'spec.nodeName') }),
  }),
  fc.record({
    resourceFieldRef: fc.record({
      resource: fc.constantFrom('limits.cpu', 'requests.memory'),
      divisor: fc.constantFrom('1m', '1Mi'),
    }),
  }),
  fc.record({
    configMapKeyRef: fc.record({ name: dnsLabel(10), key: dnsLabel(8), optional: fc.constant(true) }),
  }),
  fc.record({
    secretKeyRef: fc.record({ name: dnsLabel(10), key: dnsLabel(8), optional: fc.constant(true) }),
  }),
);
const envVar = fc.oneof(
  fc.record({ name: envName, value: anyText }),
  fc.record({ name: envName, valueFrom }),
);

const securityContext = fc.record(
  {
    privileged: fc.boolean(),
    runAsUser: fc.integer({ min: 0, max: 65535 }),
    runAsGroup: fc.integer({ min: 0, max: 65535 }),
    runAsNonRoot: fc.boolean(),
    readOnlyRootFilesystem: fc.boolean(),
    allowPrivilegeEscalation: fc.boolean(),
    capabilities: fc.record(
      { add: fc.constant(['NET_ADMIN']), drop: fc.constant(['ALL']) },
      { requiredKeys: [] },
    ),
    seccompProfile: fc.constant({ type: 'RuntimeDefault' }),
  },
  { requiredKeys: [] },
);

interface ContainerCtx {
  name: string;
  volumes: readonly string[];
  hostNetwork: boolean;
  kind: 'regular' | 'init' | 'sidecar';
}

function container(ctx: ContainerCtx): fc.Arbitrary<JsonObj> {
  const probes = ctx.kind !== 'init';
  return fc
    .record(
      {
        image,
        command: opt(fc.array(anyText, { maxLength: 3 })),
        args: opt(fc.array(anyText, { maxLength: 3 })),
        workingDir: opt(fc.constant('/work')),
        ports: opt(
          fc.integer({ min: 1, max: 3 }).chain((n) =>
            fc.tuple(
              ...uniqueNames('p', n).map((pname) =>
                fc
                  .record({
                    name: opt(fc.constant(pname)),
                    containerPort: fc.integer({ min: 1, max: 65535 }),
                    protocol: opt(fc.constantFrom('TCP', 'UDP', 'SCTP')),
                    hostPort: ctx.hostNetwork
                      ? fc.constant(undefined)
                      : opt(fc.integer({ min: 1, max: 65535 }), 0.2),
                  })
                  .map(compact),
              ),
            ),
          ),
        ),
        env: opt(fc.array(envVar, { maxLength: 4 })),
        envFrom: opt(
          fc.array(
            fc
              .record({
                prefix: opt(fc.constant('P_')),
                configMapRef: fc.record({ name: dnsLabel(10), optional: fc.constant(true) }),
              })
              .map(compact),
            { maxLength: 1 },
          ),
        ),
        // Limits or requests, not both: upstream refuses a request above its limit.
        resources: opt(
          fc.oneof(
            fc.record({ limits: fc.record({ cpu: quantity, memory: quantity }, { requiredKeys: [] }) }),
            fc.record({ requests: fc.record({ cpu: quantity, memory: quantity }, { requiredKeys: [] }) }),
          ),
        ),
        volumeMounts: opt(
          fc
            .subarray([...ctx.volumes])
            .map((vs) => vs.map((v, i) => ({ name: v, mountPath: `/mnt/${i}`, readOnly: i % 2 === 0 }))),
        ),
        livenessProbe: probes ? opt(probe('liveness'), 0.3) : fc.constant(undefined),
        readinessProbe: probes ? opt(probe('readiness'), 0.3) : fc.constant(undefined),
        startupProbe: probes ? opt(probe('startup'), 0.2) : fc.constant(undefined),
        lifecycle: probes
          ? opt(
              fc.record({ postStart: lifecycleHandler, preStop: lifecycleHandler }, { requiredKeys: [] }),
              0.3,
            )
          : fc.constant(undefined),
        terminationMessagePath: opt(fc.constant('/dev/termination-log'), 0.2),
        terminationMessagePolicy: opt(fc.constantFrom('File', 'FallbackToLogsOnError'), 0.3),
        imagePullPolicy: opt(fc.constantFrom('Always', 'IfNotPresent', 'Never'), 0.3),
        securityContext: opt(securityContext, 0.3),
        stdin: opt(fc.boolean(), 0.2),
        tty: opt(fc.boolean(), 0.2),
      },
      { requiredKeys: ['image'] },
    )
    .map((c) =>
      compact({
        name: ctx.name,
        ...c,
        restartPolicy: ctx.kind === 'sidecar' ? 'Always' : undefined,
      }),
    );
}

const keyToPath = fc.array(
  fc
    .record({ key: dnsLabel(8), path: dnsLabel(8), mode: opt(fc.integer({ min: 0, max: 0o777 })) })
    .map(compact),
  {
    maxLength: 2,
  },
);

const volumeSource = fc.oneof(
  fc.record({
    emptyDir: fc.record({ medium: fc.constantFrom('', 'Memory'), sizeLimit: quantity }, { requiredKeys: [] }),
  }),
  fc.record({
    hostPath: fc
      .record({
        path: fc.constantFrom('/tmp', '/var/log', '/data/x'),
        type: opt(fc.constantFrom('', 'Directory', 'DirectoryOrCreate')),
      })
      .map(compact),
  }),
  fc.record({
    secret: fc
      .record({
        secretName: dnsLabel(10),
        items: opt(keyToPath),
        defaultMode: opt(fc.constant(0o644)),
        optional: opt(fc.boolean()),
      })
      .map(compact),
  }),
  fc.record({
    configMap: fc
      .record({ name: dnsLabel(10), items: opt(keyToPath), optional: opt(fc.boolean()) })
      .map(compact),
  }),
  fc.record({
    downwardAPI: fc.record({
      items: fc.constant([{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }]),
    }),
  }),
  fc.record({
    projected: fc.record({
      sources: fc.constant([
        { configMap: { name: 'cm', optional: true } },
        { downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } },
      ]),
    }),
  }),
);

const toleration = fc.oneof(
  fc.constant({ operator: 'Exists' }),
  fc.record({
    key: labelKey,
    operator: fc.constant('Equal'),
    value: labelValue,
    effect: fc.constantFrom('NoSchedule', 'NoExecute'),
  }),
  fc.record({
    key: labelKey,
    operator: fc.constant('Exists'),
    effect: fc.constant('NoExecute'),
    tolerationSeconds: fc.integer({ min: 0, max: 600 }),
  }),
);

export interface PodOptions {
  /** API pods carry uid, resourceVersion, nodeName and a status; static pods apiVersion/kind. */
  from: 'manifest' | 'api';
  nodeName?: string;
}

/** A valid pod. */
export function validPod(opts: PodOptions): fc.Arbitrary<JsonObj> {
  const shape = fc.record({
    nContainers: fc.integer({ min: 1, max: 3 }),
    nInit: fc.integer({ min: 0, max: 2 }),
    nVolumes: fc.integer({ min: 0, max: 3 }),
    hostNetwork: fc.boolean(),
    sidecar: fc.boolean(),
  });
  return shape.chain(({ nContainers, nInit, nVolumes, hostNetwork, sidecar }) => {
    const volumes = uniqueNames('vol', nVolumes);
    const ctx = (name: string, kind: ContainerCtx['kind']): ContainerCtx => ({
      name,
      volumes,
      hostNetwork,
      kind,
    });
    return fc
      .record({
        name: dnsLabel(20),
        namespace: opt(dnsLabel(12), 0.6),
        labels: opt(fc.dictionary(labelKey, labelValue, { maxKeys: 3 })),
        annotations: opt(fc.dictionary(labelKey, anyText, { maxKeys: 3 })),
        containers: fc.tuple(...uniqueNames('c', nContainers).map((n) => container(ctx(n, 'regular')))),
        initContainers: fc.tuple(
          ...uniqueNames('init', nInit).map((n, i) =>
            container(ctx(n, sidecar && i === 0 ? 'sidecar' : 'init')),
          ),
        ),
        volumes: fc.tuple(...volumes.map((v) => volumeSource.map((s) => ({ name: v, ...s })))),
        spec: fc.record(
          {
            restartPolicy: fc.constantFrom('Always', 'OnFailure', 'Never'),
            dnsPolicy: fc.constantFrom('ClusterFirst', 'Default', 'ClusterFirstWithHostNet'),
            dnsConfig: fc.record(
              { nameservers: fc.constant(['10.0.0.10']), searches: fc.constant(['svc.local']) },
              { requiredKeys: [] },
            ),
            terminationGracePeriodSeconds: fc.integer({ min: 0, max: 60 }),
            activeDeadlineSeconds: fc.integer({ min: 1, max: 100_000 }),
            nodeSelector: fc.dictionary(labelKey, labelValue, { maxKeys: 2 }),
            hostPID: fc.boolean(),
            hostIPC: fc.boolean(),
            securityContext: fc.record(
              {
                runAsUser: fc.integer({ min: 0, max: 65535 }),
                fsGroup: fc.integer({ min: 0, max: 65535 }),
                supplementalGroups: fc.array(fc.integer({ min: 0, max: 65535 }), { maxLength: 2 }),
                sysctls: fc.constant([{ name: 'net.ipv4.ip_local_port_range', value: '1024 65000' }]),
              },
              { requiredKeys: [] },
            ),
            imagePullSecrets: fc.array(fc.record({ name: dnsLabel(10) }), { maxLength: 1 }),
            hostname: dnsLabel(12),
            subdomain: dnsLabel(12),
            schedulerName: fc.constant('default-scheduler'),
            tolerations: fc.array(toleration, { maxLength: 2 }),
            hostAliases: fc.array(
              fc.record({ ip: fc.constant('10.1.2.3'), hostnames: fc.constant(['db.local']) }),
              { maxLength: 1 },
            ),
            priority: fc.integer({ min: -1000, max: 1_000_000 }),
            priorityClassName: fc.constantFrom('high', 'system-node-critical'),
            enableServiceLinks: fc.boolean(),
            readinessGates: fc.constant([{ conditionType: 'example.com/ready' }]),
            affinity: fc.constant({
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    { matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }] },
                  ],
                },
              },
            }),
            overhead: fc.record({ cpu: fc.constant('10m') }),
            automountServiceAccountToken: fc.boolean(),
          },
          { requiredKeys: [] },
        ),
        uid: fc.uuid(),
        resourceVersion: fc.integer({ min: 1, max: 1e6 }).map(String),
      })
      .map((g) => {
        const spec: JsonObj = compact({
          ...g.spec,
          containers: g.containers,
          initContainers: g.initContainers.length > 0 ? g.initContainers : undefined,
          volumes: g.volumes.length > 0 ? g.volumes : undefined,
          hostNetwork: hostNetwork ? true : undefined,
        });
        const metadata = compact({
          name: g.name,
          namespace: opts.from === 'api' ? (g.namespace ?? 'default') : g.namespace,
          labels: g.labels,
          annotations: g.annotations,
          uid: opts.from === 'api' ? g.uid : undefined,
          resourceVersion: opts.from === 'api' ? g.resourceVersion : undefined,
          creationTimestamp: opts.from === 'api' ? '2026-11-24T00:00:00Z' : undefined,
        });
        if (opts.from === 'api') {
          spec.nodeName = opts.nodeName ?? 'fuzz-node';
          return compact({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata,
            spec,
            status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] },
          });
        }
        return compact({ apiVersion: 'v1', kind: 'Pod', metadata, spec });
      });
  });
}
