/**
 * kubectl's `get` options on the node CLI: label selectors (apimachinery labels/selector.go),
 * `--show-labels` and `--no-headers` (kubectl printers/tableprinter.go: LABELS last,
 * labels.FormatLabels), `-o jsonpath=` (client-go util/jsonpath) and `-o custom-columns=`
 * (kubectl printers/customcolumn.go). Expected text written from their format rules.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { Pod } from '../../api/types.ts';
import { buildPod } from '../../../test/kit/pod.ts';
import type { NodeClient } from './client.ts';
import { runGetPods, type CommandIO } from './get-pods.ts';
import { executeTemplate, parseTemplate } from './jsonpath.ts';
import { parseSelector } from './label-selector.ts';
import { formatLabels, formatTemplate, parseTemplateOutput, podTable } from './pod-printer.ts';

const NOW = Date.parse('2026-11-24T20:00:00Z');

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

function pod(name: string, labels: Record<string, string>, ip: string, ports: number[]): Pod {
  const p = buildPod(name, {
    creationTimestamp: '2026-11-24T19:55:00Z',
    containers: ['main'],
    nodeName: 'node-1',
    status: {
      phase: 'Running',
      podIP: ip,
      conditions: [{ type: 'Ready', status: 'True' }],
      containerStatuses: [
        {
          name: 'main',
          state: { running: { startedAt: '2026-11-24T19:55:01Z' } },
          lastState: {},
          ready: true,
          restartCount: 0,
          image: 'busybox:1.29',
          imageID: 'sha256:abc',
          containerID: 'containerd://c1',
        },
      ],
    },
  });
  p.metadata.labels = labels;
  const c = p.spec.containers[0];
  if (c) c.ports = ports.map((containerPort) => ({ containerPort }));
  return p;
}
const web = pod('web', { tier: 'front', app: 'web' }, '10.88.0.7', [80, 443]);
const db = pod('db', {}, '10.88.0.8', []);

describe('label selectors (kubectl get -l)', () => {
  const cases: [string, Record<string, string>, boolean][] = [
    ['app=web', { app: 'web' }, true],
    ['app==web', { app: 'web' }, true],
    ['app=web', { app: 'db' }, false],
    ['app!=web', {}, true],
    ['app!=web', { app: 'web' }, false],
    ['app in (web,db)', { app: 'db' }, true],
    ['app in (web,db)', {}, false],
    ['app notin (web)', {}, true],
    ['app notin (web)', { app: 'web' }, false],
    ['app', { app: '' }, true],
    ['!app', { app: 'x' }, false],
    ['!app', {}, true],
    ['app=web,tier in (front)', { app: 'web', tier: 'front' }, true],
    ['app=web,tier in (front)', { app: 'web', tier: 'back' }, false],
    ['replicas>2', { replicas: '3' }, true],
    ['replicas<2', { replicas: '3' }, false],
    ['example.com/role=x', { 'example.com/role': 'x' }, true],
  ];
  for (const [sel, labels, want] of cases) {
    it(`"${sel}" ${want ? 'matches' : 'does not match'} ${JSON.stringify(labels)}`, () =>
      assert.equal(parseSelector(sel)(labels), want));
  }
  it('refuses a selector that does not parse', () => {
    assert.throws(() => parseSelector('app=(x'), /invalid label value/);
    assert.throws(() => parseSelector('a,,b'), /expected: identifier/);
    assert.throws(() => parseSelector('-bad=x'), /invalid label key/);
  });
});

describe('--show-labels and --no-headers', () => {
  it('adds LABELS last, k=v sorted by key, <none> without labels', () => {
    assert.equal(
      podTable([web, db], { wide: false, allNamespaces: false, showLabels: true }, NOW),
      'NAME   READY   STATUS    RESTARTS   AGE   LABELS\n' +
        'web    1/1     Running   0          5m    app=web,tier=front\n' +
        'db     1/1     Running   0          5m    <none>\n',
    );
    assert.equal(formatLabels(undefined), '<none>');
  });
  it('leaves the header out and aligns the rows alone', () => {
    assert.equal(
      podTable([web], { wide: false, allNamespaces: false, noHeaders: true }, NOW),
      'web   1/1   Running   0     5m\n',
    );
  });
});

describe('-o jsonpath (client-go util/jsonpath)', () => {
  const list = { kind: 'List', items: [web, db] };
  const run = (t: string, data: unknown = list): string => executeTemplate(parseTemplate(t), data);
  it('joins the results of one expression with a space, with no newline added', () => {
    assert.equal(run('{.items[*].metadata.name}'), 'web db');
  });
  it('indexes, slices and counts from the end', () => {
    assert.equal(run('{.items[0].status.podIP}'), '10.88.0.7');
    assert.equal(run('{.items[-1].metadata.name}'), 'db');
    assert.equal(run('{.items[0:1].metadata.name}'), 'web');
  });
  it('ranges with literals, as the kubectl cheat sheet does', () => {
    assert.equal(
      run('{range .items[*]}{.metadata.name}{"\\t"}{.status.podIP}{"\\n"}{end}'),
      'web\t10.88.0.7\ndb\t10.88.0.8\n',
    );
  });
  it('filters on a field', () => {
    assert.equal(run('{.items[?(@.status.podIP=="10.88.0.8")].metadata.name}'), 'db');
    assert.equal(run('{.items[?(@.metadata.labels.app)].metadata.name}'), 'web');
    assert.equal(run('{.items[0].spec.containers[0].ports[?(@.containerPort>100)].containerPort}'), '443');
  });
  it("reads keys with dots through ['key'] or escaped dots, and descends recursively", () => {
    const data = {
      metadata: { annotations: { 'a.b/c': 'x' } },
      spec: { a: { name: 'n1' }, b: [{ name: 'n2' }] },
    };
    assert.equal(run("{.metadata.annotations['a.b/c']}", data), 'x');
    assert.equal(run('{.metadata.annotations.a\\.b/c}', data), 'x');
    assert.equal(run('{..name}', data), 'n1 n2');
  });
  it('prints maps and lists as compact JSON, text around actions as it is', () => {
    assert.equal(run('labels: {.items[0].metadata.labels}', list), 'labels: {"tier":"front","app":"web"}');
  });
  it('prints nothing for a missing key (kubectl allows missing keys)', () => {
    assert.equal(run('{.items[0].metadata.nope}'), '');
  });
  it('refuses a template it cannot parse', () => {
    assert.throws(() => parseTemplate('{.items[*]'), /unclosed action/);
    assert.throws(() => parseTemplate('{range .items[*]}{.x}'), /unclosed range/);
    assert.throws(() => parseTemplate('{.a[1,2]}'), /unsupported array expression/);
  });
});

describe('-o custom-columns (kubectl printers/customcolumn.go)', () => {
  it('prints a column per spec entry, several values joined by commas, <none> for nothing', () => {
    const out = parseTemplateOutput(
      'custom-columns=NAME:.metadata.name,IP:status.podIP,PORTS:.spec.containers[*].ports[*].containerPort',
    );
    assert.equal(
      formatTemplate([web, db], out, false),
      'NAME   IP          PORTS\n' + 'web    10.88.0.7   80,443\n' + 'db     10.88.0.8   <none>\n',
    );
    assert.equal(formatTemplate([web], out, false, true), 'web   10.88.0.7   80,443\n');
  });
  it('refuses a spec without a header', () => {
    assert.throws(
      () => parseTemplateOutput('custom-columns=.metadata.name'),
      /expected <header>:<json-path-expr>/,
    );
  });
  it('-o jsonpath= over one named pod sees the pod, over several the List', () => {
    assert.equal(formatTemplate([web], parseTemplateOutput('jsonpath={.metadata.name}'), true), 'web');
    assert.equal(formatTemplate([web], parseTemplateOutput('jsonpath={.kind}'), false), 'List');
  });
});

describe('tskubelet get pods with the options', () => {
  const client: NodeClient = {
    target: 'fake',
    getJSON: <T>() => Promise.resolve({ kind: 'PodList', items: [web, db] } as T),
    getStream: () => Promise.reject(new Error('not used')),
    upgrade: () => Promise.reject(new Error('not used')),
  };
  const io = (): CommandIO & { out: Capture; err: Capture } => ({
    out: new Capture(),
    err: new Capture(),
    signal: new AbortController().signal,
    now: () => NOW,
  });
  it('-l selects by label, and says so when nothing matches', async () => {
    const o = io();
    await runGetPods(client, undefined, { selector: 'app=web', noHeaders: true }, o);
    assert.equal(o.out.text, 'web   1/1   Running   0     5m\n');
    const none = io();
    await runGetPods(client, undefined, { selector: 'app in (nope)' }, none);
    assert.equal(none.err.text, 'No resources found in default namespace.\n');
  });
  it('-o jsonpath prints the template over the List', async () => {
    const o = io();
    await runGetPods(client, undefined, { output: 'jsonpath={.items[*].status.podIP}' }, o);
    assert.equal(o.out.text, '10.88.0.8 10.88.0.7'); // sorted by name, as get sorts
  });
});
