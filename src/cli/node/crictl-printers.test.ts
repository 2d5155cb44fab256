/**
 * Golden tests of crictl's printers: the expected text is written from crictl's format strings
 * (kubernetes-sigs/cri-tools cmd/crictl: container.go OutputContainers, image.go listImageCommand,
 * container_stats.go displayStats, container.go marshalContainerStatus, util.go outputStatusData,
 * display.go's tabwriter 20/1/3) and docker/go-units (duration.go, size.go).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Container, ContainerStats, ContainerStatus, Image } from '../../runtime/cri/index.ts';
import {
  goFormatG,
  imagesTable,
  inspectJSON,
  psTable,
  statsTable,
  truncatedID,
  unitsHumanDuration,
  unitsHumanSize,
} from './crictl-printers.ts';

const NOW = Date.parse('2026-11-28T12:00:00Z');
const ns = (ms: number): number => ms * 1e6;

const web: Container = {
  id: '0123456789abcdef'.repeat(4),
  podSandboxId: 'a'.repeat(64),
  metadata: { name: 'web', attempt: 0 },
  image: { image: `sha256:${'fedcba9876543210'.repeat(4)}` },
  imageRef: '',
  state: 'CONTAINER_RUNNING',
  createdAt: ns(NOW - 90_000),
  labels: { 'io.kubernetes.pod.name': 'nginx', 'io.kubernetes.pod.namespace': 'default' },
  annotations: {},
};
const sidecar: Container = {
  id: 'f'.repeat(64),
  podSandboxId: 'b'.repeat(64),
  metadata: { name: 'sidecar', attempt: 1 },
  image: { image: 'docker.io/library/busybox:1.36' },
  imageRef: '',
  state: 'CONTAINER_EXITED',
  createdAt: ns(NOW - 3 * 3_600_000),
  labels: {},
  annotations: {},
};

describe('crictl ps printer', () => {
  it('prints the columns, truncated ids and digests, go-units ages, newest first, as crictl ps -a', () => {
    assert.equal(
      psTable([sidecar, web], NOW),
      'CONTAINER           IMAGE                            CREATED              STATE               NAME                ATTEMPT             POD ID              POD                 NAMESPACE\n' +
        '0123456789abc       fedcba9876543                    About a minute ago   Running             web                 0                   aaaaaaaaaaaaa       nginx               default\n' +
        'fffffffffffff       docker.io/library/busybox:1.36   3 hours ago          Exited              sidecar             1                   bbbbbbbbbbbbb       unknown             unknown\n',
    );
  });
  it('prints only the full ids with -q', () => {
    assert.equal(psTable([sidecar, web], NOW, { quiet: true }), `${web.id}\n${sidecar.id}\n`);
  });
  it('prints only the header when there is no container', () => {
    assert.equal(
      psTable([], NOW),
      'CONTAINER           IMAGE               CREATED             STATE               NAME                ATTEMPT             POD ID              POD                 NAMESPACE\n',
    );
  });
});

describe('crictl images printer', () => {
  const images: Image[] = [
    {
      id: `sha256:${'1234567890ab'.repeat(5)}1234`,
      repoTags: ['registry.k8s.io/pause:3.6'],
      repoDigests: [`registry.k8s.io/pause@sha256:${'c'.repeat(64)}`],
      size: 301_773,
      username: '',
    },
    {
      id: `sha256:${'abcdef'.repeat(10)}abcd`,
      repoTags: ['docker.io/library/busybox:1.36', 'docker.io/library/busybox:latest'],
      repoDigests: [`docker.io/library/busybox@sha256:${'d'.repeat(64)}`],
      size: 2_224_358,
      username: '',
    },
    {
      id: `sha256:${'9'.repeat(64)}`,
      repoTags: [],
      repoDigests: [`quay.io/x/y@sha256:${'e'.repeat(64)}`],
      size: 999,
      username: '',
    },
  ];
  it('prints a row per tag, <none> for an untagged image, sizes with 3 digits, sorted by reference', () => {
    assert.equal(
      imagesTable(images),
      'IMAGE                       TAG                 IMAGE ID            SIZE\n' +
        'docker.io/library/busybox   1.36                abcdefabcdefa       2.22MB\n' +
        'docker.io/library/busybox   latest              abcdefabcdefa       2.22MB\n' +
        'quay.io/x/y                 <none>              9999999999999       999B\n' +
        'registry.k8s.io/pause       3.6                 1234567890ab1       302kB\n',
    );
  });
  it('prints the full image ids with -q', () => {
    assert.equal(
      imagesTable(images, { quiet: true }),
      `${images[1]?.id}\n${images[2]?.id}\n${images[0]?.id}\n`,
    );
  });
});

describe('crictl stats printer', () => {
  const stats = (id: string, name: string, cpuTs: number, cpu?: number, mem?: number): ContainerStats => ({
    attributes: { id, metadata: { name, attempt: 0 }, labels: {}, annotations: {} },
    cpu: { timestamp: cpuTs, ...(cpu !== undefined ? { usageCoreNanoSeconds: { value: cpu } } : {}) },
    memory: { timestamp: cpuTs, ...(mem !== undefined ? { workingSetBytes: { value: mem } } : {}) },
    writableLayer: {
      timestamp: cpuTs,
      usedBytes: { value: name === 'web' ? 12_288 : 4_096 },
      inodesUsed: { value: name === 'web' ? 7 : 3 },
    },
  });
  const before = [stats(web.id, 'web', 1e18, 5e9, 10_485_760), stats(sidecar.id, 'sidecar', 1e18)];
  const after = [
    stats(web.id, 'web', 1e18 + 1e9, 5e9 + 123_456_789, 10_485_760),
    stats(sidecar.id, 'sidecar', 1e18),
  ];
  it('prints CPU % over the sample, the working set and the writable layer, running containers only', () => {
    assert.equal(
      statsTable(before, after),
      'CONTAINER           NAME                CPU %               MEM                 DISK                INODES\n' +
        '0123456789abc       web                 12.35               10.49MB             12.29kB             7\n',
    );
  });
  it('prints stopped containers too with -a, and leaves out one that was not in the first sample', () => {
    assert.equal(
      statsTable(before, [...after, stats('c'.repeat(64), 'new', 1e18, 1, 1)], { all: true }),
      'CONTAINER           NAME                CPU %               MEM                 DISK                INODES\n' +
        '0123456789abc       web                 12.35               10.49MB             12.29kB             7\n' +
        'fffffffffffff       sidecar             0.00                0B                  4.096kB             3\n',
    );
  });
});

describe('crictl inspect printer', () => {
  it('prints {info, status} with sorted keys, RFC 3339 times and Go-escaped HTML characters', () => {
    const status: ContainerStatus = {
      id: web.id,
      metadata: { name: 'web', attempt: 0 },
      state: 'CONTAINER_RUNNING',
      createdAt: 1_764_331_200_000_000_000,
      startedAt: 1_764_331_201_500_000_000,
      finishedAt: 0,
      exitCode: 0,
      image: { image: 'docker.io/library/nginx:1.25' },
      imageRef: 'docker.io/library/nginx@sha256:abc',
      reason: '',
      message: '',
      labels: { 'io.kubernetes.pod.name': 'nginx' },
      annotations: { x: '<b>&' },
      mounts: [],
      logPath: '/var/log/pods/x/web/0.log',
    };
    const info = {
      info: JSON.stringify({ sandboxID: 'sb', pid: 4242, runtimeSpec: { ociVersion: '1.0.2' } }),
    };
    assert.equal(
      inspectJSON(status, info),
      `{
  "info": {
    "pid": 4242,
    "runtimeSpec": {
      "ociVersion": "1.0.2"
    },
    "sandboxID": "sb"
  },
  "status": {
    "annotations": {
      "x": "\\u003cb\\u003e\\u0026"
    },
    "createdAt": "2025-11-28T12:00:00Z",
    "exitCode": 0,
    "finishedAt": "0001-01-01T00:00:00Z",
    "id": "${web.id}",
    "image": {
      "image": "docker.io/library/nginx:1.25"
    },
    "imageRef": "docker.io/library/nginx@sha256:abc",
    "labels": {
      "io.kubernetes.pod.name": "nginx"
    },
    "logPath": "/var/log/pods/x/web/0.log",
    "message": "",
    "metadata": {
      "attempt": 0,
      "name": "web"
    },
    "mounts": [],
    "reason": "",
    "startedAt": "2025-11-28T12:00:01.5Z",
    "state": "CONTAINER_RUNNING"
  }
}
`,
    );
  });
  it('prints the zero time as startedAt for a container never started', () => {
    const out = inspectJSON(
      {
        ...(JSON.parse('{}') as ContainerStatus),
        state: 'CONTAINER_CREATED',
        createdAt: 1e18,
        startedAt: 0,
        finishedAt: 0,
      },
      {},
    );
    assert.match(out, /"startedAt": "0001-01-01T00:00:00Z"/);
    assert.doesNotMatch(out, /"info"/);
  });
});

describe('crictl helpers', () => {
  it('truncates ids to 13 characters after the prefix (getTruncatedID)', () => {
    assert.equal(truncatedID(`sha256:${'a'.repeat(64)}`, 'sha256:'), 'a'.repeat(13));
    assert.equal(truncatedID('short', ''), 'short');
  });
  for (const [ms, want] of [
    [0, 'Less than a second'],
    [1_000, '1 second'],
    [59_000, '59 seconds'],
    [60_000, 'About a minute'],
    [119_000, 'About a minute'],
    [3_599_000, '59 minutes'],
    [5_400_000, '2 hours'],
    [47 * 3_600_000, '47 hours'],
    [3 * 24 * 3_600_000, '3 days'],
    [20 * 24 * 3_600_000, '2 weeks'],
    [90 * 24 * 3_600_000, '3 months'],
    [800 * 24 * 3_600_000, '2 years'],
  ] as const) {
    it(`go-units HumanDuration prints ${ms} ms as "${want}"`, () =>
      assert.equal(unitsHumanDuration(ms), want));
  }
  for (const [v, prec, want] of [
    [0, 3, '0B'],
    [999, 3, '999B'],
    [1000, 3, '1kB'],
    [999_999, 3, '1e+03kB'],
    [301_773, 3, '302kB'],
    [1.5e9, 3, '1.5GB'],
    [10_485_760, 4, '10.49MB'],
  ] as const) {
    it(`go-units HumanSizeWithPrecision(${v}, ${prec}) is ${want}`, () =>
      assert.equal(unitsHumanSize(v, prec), want));
  }
  it("formats %g as Go's fmt does", () => {
    assert.equal(goFormatG(0.0001234, 3), '0.000123');
    assert.equal(goFormatG(0.00001234, 3), '1.23e-05');
    assert.equal(goFormatG(123456, 3), '1.23e+05');
  });
});
