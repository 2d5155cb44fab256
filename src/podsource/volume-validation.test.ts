import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCode } from '../util/errors.ts';
import { defaultStaticPod } from './static-pod.ts';
import { manifest } from './testing.ts';

const fileOpts = {
  nodeName: 'node-1',
  source: 'file' as const,
  origin: '/etc/kubernetes/manifests/web.yaml',
};

/** What a static pod manifest with this spec patch gives: the error message, or 'ok'. */
function outcome(patch: (spec: Record<string, unknown>, container: Record<string, unknown>) => void): string {
  const raw = manifest('web') as unknown as {
    spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
  };
  patch(raw.spec, raw.spec.containers[0] ?? {});
  try {
    defaultStaticPod(raw, fileOpts);
    return 'ok';
  } catch (err) {
    assert.ok(hasCode(err, 'InvalidArgument'), `expected InvalidArgument, got ${String(err)}`);
    return (err as Error).message;
  }
}

const hostPath = (path: string, type?: string) => (spec: Record<string, unknown>) => {
  spec.volumes = [{ name: 'host', hostPath: { path, ...(type !== undefined && { type }) } }];
};

const mounted =
  (mountPropagation: string, privileged?: boolean, field: 'containers' | 'initContainers' = 'containers') =>
  (spec: Record<string, unknown>, c: Record<string, unknown>) => {
    spec.volumes = [{ name: 'host', hostPath: { path: '/mnt/shared', type: 'Directory' } }];
    const container = field === 'containers' ? c : { name: 'init', image: 'busybox:1.29' };
    container.volumeMounts = [{ name: 'host', mountPath: '/shared', mountPropagation }];
    if (privileged !== undefined) container.securityContext = { privileged };
    if (field === 'initContainers') spec.initContainers = [container];
  };

describe('static pod validation of host paths and mount propagation (upstream ValidatePodCreate)', () => {
  const cases: [string, Parameters<typeof outcome>[0], RegExp | 'ok'][] = [
    ['a plain host path', hostPath('/var/log'), 'ok'],
    ['a name with two dots that is no `..` element', hostPath('/data/..backup/x..y'), 'ok'],
    [
      'a `..` element in the middle',
      hostPath('/var/log/../../etc'),
      /spec\.volumes\[0\]\.hostPath\.path: Invalid value: "\/var\/log\/\.\.\/\.\.\/etc": must not contain '\.\.'$/,
    ],
    [
      'a relative path starting with `..`',
      hostPath('../etc'),
      /spec\.volumes\[0\]\.hostPath\.path: Invalid value: "\.\.\/etc": must not contain '\.\.'/,
    ],
    [
      'a trailing `..`',
      hostPath('/etc/kubernetes/..'),
      /hostPath\.path: Invalid value: .*must not contain '\.\.'/,
    ],
    [
      'every supported type',
      (s) => void (s.volumes = TYPES.map((type, i) => ({ name: `h${i}`, hostPath: { path: '/x', type } }))),
      'ok',
    ],
    [
      'an unknown type, with upstream’s sorted list of supported ones',
      hostPath('/var/log', 'Dir'),
      /spec\.volumes\[0\]\.hostPath\.type: Unsupported value: "Dir": supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"$/,
    ],
    [
      'a lowercase type (types are case-sensitive)',
      hostPath('/var/log', 'directory'),
      /hostPath\.type: Unsupported value: "directory"/,
    ],
    [
      'an empty path: required, nothing else said',
      hostPath('', 'Dir'),
      /spec\.volumes\[0\]\.hostPath\.path: Required value$/,
    ],
    ['HostToContainer in an unprivileged container', mounted('HostToContainer'), 'ok'],
    ['None in an unprivileged container', mounted('None', false), 'ok'],
    ['Bidirectional in a privileged container', mounted('Bidirectional', true), 'ok'],
    [
      'Bidirectional in an unprivileged container (upstream’s path has no index)',
      mounted('Bidirectional'),
      /spec\.containers\[0\]\.volumeMounts\.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers$/,
    ],
    [
      'Bidirectional with privileged: false',
      mounted('Bidirectional', false),
      /volumeMounts\.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers/,
    ],
    [
      'Bidirectional in an unprivileged init container',
      mounted('Bidirectional', undefined, 'initContainers'),
      /spec\.initContainers\[0\]\.volumeMounts\.mountPropagation: Forbidden/,
    ],
    [
      'an unknown propagation',
      mounted('Shared', true),
      /spec\.containers\[0\]\.volumeMounts\.mountPropagation: Unsupported value: "Shared": supported values: "Bidirectional", "HostToContainer", "None"$/,
    ],
  ];
  for (const [what, patch, want] of cases) {
    it(`${want === 'ok' ? 'accepts' : 'rejects'} ${what}`, () => {
      const got = outcome(patch);
      if (want === 'ok') assert.equal(got, 'ok');
      else assert.match(got, want);
    });
  }
});

const TYPES = [
  '',
  'DirectoryOrCreate',
  'Directory',
  'FileOrCreate',
  'File',
  'Socket',
  'CharDevice',
  'BlockDevice',
];
