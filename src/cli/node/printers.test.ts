import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import type { Pod } from '../../api/types.ts';
import { CANNED_TIMELINE } from '../../timeline/testing.ts';
import { CANNED_WHY } from '../../why/testing.ts';
import { formatTimeline, formatWhy, formatMs } from './debug-printers.ts';
import { describePod, rfc1123z } from './describe-printer.ts';
import { formatPods, parseOutputFormat, podTable } from './pod-printer.ts';
import { DESCRIBE_TABS, TABLE_TABS, tabwrite } from './tabwriter.ts';
import { buildPod } from '../../../test/kit/pod.ts';

const NOW = Date.parse('2026-11-24T20:00:00Z');

function runningPod(name: string, namespace = 'default'): Pod {
  return buildPod(name, {
    namespace,
    creationTimestamp: '2026-11-24T19:55:00Z',
    containers: ['main'],
    nodeName: 'node-1',
    status: {
      phase: 'Running',
      podIP: '10.88.0.7',
      podIPs: [{ ip: '10.88.0.7' }],
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
}

describe('tabwriter (Go text/tabwriter as kubectl configures it)', () => {
  it('pads every column but the last to its widest cell plus 3, at least 6', () => {
    const out = tabwrite('NAME\tREADY\tAGE\nweb-node-1\t1/1\t5m\n', TABLE_TABS);
    assert.equal(out, 'NAME         READY   AGE\nweb-node-1   1/1     5m\n');
  });

  it('aligns a column only across the consecutive lines that have it (describe blocks)', () => {
    const out = tabwrite('Name:\tweb\nContainers:\n  main:\n    Image:\tbusybox\n', DESCRIBE_TABS);
    assert.equal(out, 'Name:  web\nContainers:\n  main:\n    Image:  busybox\n');
  });
});

describe('get pods printing', () => {
  it('prints kubectl get pods columns, -o wide columns and -A NAMESPACE first', () => {
    const pods = [runningPod('web'), runningPod('db')];
    assert.equal(
      podTable(pods, { wide: false, allNamespaces: false }, NOW),
      'NAME   READY   STATUS    RESTARTS   AGE\nweb    1/1     Running   0          5m\ndb     1/1     Running   0          5m\n',
    );
    const wide = podTable([runningPod('web')], { wide: true, allNamespaces: false }, NOW).split('\n');
    assert.equal(
      wide[0],
      'NAME   READY   STATUS    RESTARTS   AGE   IP          NODE     NOMINATED NODE   READINESS GATES',
    );
    assert.equal(
      wide[1],
      'web    1/1     Running   0          5m    10.88.0.7   node-1   <none>           <none>',
    );
    const all = podTable([runningPod('web', 'kube-system')], { wide: false, allNamespaces: true }, NOW);
    assert.match(all, /^NAMESPACE {5}NAME {3}READY/);
    assert.match(all, /\nkube-system {3}web {4}1\/1/);
  });

  it('-o json prints a v1 List with 4-space indent, or the one pod asked for', () => {
    const list = JSON.parse(formatPods([runningPod('web')], 'json', false)) as Record<string, unknown>;
    assert.equal(list.kind, 'List');
    assert.equal(list.apiVersion, 'v1');
    assert.deepEqual(list.metadata, { resourceVersion: '' });
    assert.match(formatPods([runningPod('web')], 'json', false), /^\{\n {4}"apiVersion": "v1",/);
    const one = JSON.parse(formatPods([runningPod('web')], 'json', true)) as Pod;
    assert.equal(one.kind, 'Pod');
    assert.equal(one.metadata.name, 'web');
  });

  it('-o yaml prints YAML that parses back to the same object, lists not indented under their key', () => {
    const text = formatPods([runningPod('web')], 'yaml', false);
    assert.match(text, /\nitems:\n- apiVersion: v1\n/);
    const back = parse(text) as { items: Pod[] };
    assert.deepEqual(back.items[0]?.status, runningPod('web').status);
  });

  it('-o name prints pod/NAME; an unknown -o is refused with the allowed formats', () => {
    assert.equal(formatPods([runningPod('a'), runningPod('b')], 'name', false), 'pod/a\npod/b\n');
    assert.equal(parseOutputFormat(undefined), 'table');
    assert.equal(parseOutputFormat('wide'), 'wide');
    assert.throws(
      () => parseOutputFormat('go-template'),
      /allowed formats are: custom-columns,json,jsonpath,name,wide,yaml/,
    );
  });
});

describe('describe pod', () => {
  it('prints kubectl describe sections aligned, with container state, conditions and volumes', () => {
    const p = runningPod('web');
    p.metadata.labels = { b: '2', a: '1' };
    p.metadata.annotations = { 'kubernetes.io/config.source': 'file' };
    p.spec.volumes = [{ name: 'data', emptyDir: {} }];
    const c = p.spec.containers[0];
    if (c) {
      c.volumeMounts = [{ name: 'data', mountPath: '/data' }];
      c.livenessProbe = { exec: { command: ['cat', '/tmp/ok'] } };
      c.resources = { limits: { memory: '64Mi' } };
    }
    const st = p.status?.containerStatuses?.[0];
    if (st) {
      st.restartCount = 1;
      st.lastState = {
        terminated: {
          exitCode: 1,
          reason: 'Error',
          startedAt: '2026-11-24T19:55:00Z',
          finishedAt: '2026-11-24T19:55:01Z',
        },
      };
    }
    const out = describePod(p, NOW);
    const lines = out.split('\n');
    assert.equal(lines[0], 'Name:             web');
    assert.equal(lines[1], 'Namespace:        default');
    assert.ok(lines.includes('Labels:           a=1'), out);
    assert.ok(lines.includes('                  b=2'), out);
    assert.ok(lines.includes('Annotations:      kubernetes.io/config.source: file'), out);
    assert.ok(lines.includes('Status:           Running'), out);
    assert.match(out, /\n {4}State: {10}Running\n {6}Started: {6}Tue, 24 Nov 2026 19:55:01 \+0000\n/);
    assert.match(out, /\n {4}Last State: {5}Terminated\n {6}Reason: {7}Error\n {6}Exit Code: {4}1\n/);
    assert.match(out, /\n {4}Restart Count: {2}1\n/);
    assert.match(
      out,
      /\n {4}Liveness: +exec \[cat \/tmp\/ok\] delay=0s timeout=1s period=10s #success=1 #failure=3\n/,
    );
    assert.match(out, /\n {4}Limits:\n {6}memory: +64Mi\n/);
    assert.match(out, /\n {6}\/data from data \(rw\)\n/);
    assert.match(out, /\nConditions:\n {2}Type +Status\n {2}Ready +True \n/);
    assert.match(
      out,
      /\nVolumes:\n {2}data:\n {4}Type: +EmptyDir \(a temporary directory that shares a pod's lifetime\)\n/,
    );
    assert.match(
      out,
      /\nEvents: +<not served over HTTPS: use the local socket, or see `tskubelet why web`>\n$/,
    );
  });

  it('shows a deleted pod as Terminating with how long it lasts, and RFC 1123 times in UTC', () => {
    const p = runningPod('web');
    p.metadata.deletionTimestamp = '2026-11-24T19:59:30Z';
    p.metadata.deletionGracePeriodSeconds = 30;
    const out = describePod(p, NOW);
    assert.match(out, /\nStatus: +Terminating \(lasts 30s\)\nTermination Grace Period: +30s\n/);
    assert.equal(rfc1123z('2026-01-02T03:04:05Z'), 'Fri, 02 Jan 2026 03:04:05 +0000');
  });
});

describe('timeline and why printing (canned tskubelet.io/v1alpha1 documents)', () => {
  it('prints one table per attempt: step, container/volume, +offset, time since the previous step', () => {
    const out = formatTimeline(CANNED_TIMELINE);
    const lines = out.split('\n');
    assert.equal(lines[0], 'Pod default/web (u1)');
    assert.ok(lines.includes('Attempt 1:'));
    assert.match(out, /\nSTEP +CONTAINER\/VOLUME +OFFSET +SINCE PREVIOUS +DETAIL\n/);
    assert.match(out, /\nseen +- +\+0\.0ms +- +source=file\n/);
    assert.match(out, /\nvolume-ready +volume data +\+4\.2ms +\+4\.2ms\n/);
    assert.match(out, /\nimage-pull-done +main +\+812ms +\+808ms +image=busybox:1\.29 bytes=123456 pulled\n/);
    assert.match(out, /\nAttempt 2:\n.*\nsandbox-created +- +\+1m05s +\+1m04s\n/);
    assert.match(out, /3 older steps were dropped/);
  });

  it('formats durations in the unit that reads best', () => {
    assert.deepEqual(
      [formatMs(0.4), formatMs(12.6), formatMs(1234), formatMs(12_345), formatMs(125_000), formatMs(-5, '+')],
      ['0.4ms', '13ms', '1.23s', '12.3s', '2m05s', '-5.0ms'],
    );
  });

  it('prints the summary, then each finding with its evidence', () => {
    const why = CANNED_WHY;
    assert.equal(
      formatWhy(why),
      [
        'Pod default/web (u1): Running, not Ready',
        '',
        'Container main is in crash-loop back-off: it exited with code 1 and is restarted in 37 s.',
        '',
        'Findings:',
        '  CrashLoopBackOff  container main  since 2026-11-24T20:01:02.000Z',
        '    It exited with code 1 at 20:01:02 after running 0.4 s; restart 3 is in 37 s.',
        '    Evidence:',
        '      exitCode: 1',
        '      restartCount: 3',
        '      nextRetryInSeconds: 37',
        '      lastLogLines:',
        '        boom',
        '        bang',
        '',
      ].join('\n'),
    );
    const fine = formatWhy({
      ...why,
      ready: true,
      summary: 'Running and Ready: nothing is holding it.',
      findings: [],
    });
    assert.equal(fine, 'Pod default/web (u1): Running, Ready\n\nRunning and Ready: nothing is holding it.\n');
  });
});

describe('text from pods on the terminal (a container must not drive it)', () => {
  /** What a terminal acts on: C0 but TAB and LF, DEL, C1. */
  // eslint-disable-next-line no-control-regex
  const ACTIVE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
  const CLEAR = '\u001b[2J\u001b[H';
  const TITLE = '\u001b]0;pwned\u0007';
  const CSI8 = '\u009b31m';

  function hostilePod(): Pod {
    const pod = runningPod('web');
    pod.metadata.annotations = { note: `${CLEAR}hello${TITLE}` };
    pod.spec.containers[0] = {
      name: 'main',
      image: 'busybox:1.29',
      args: [`sh -c 'printf ${CSI8}'`],
      env: [{ name: 'GREETING', value: `hi\rFAKE LINE${CSI8}` }],
    };
    const st = pod.status?.containerStatuses?.[0];
    if (st) {
      st.state = { waiting: { reason: `CrashLoopBackOff${CLEAR}`, message: `back-off${TITLE}` } };
      st.lastState = {
        terminated: {
          exitCode: 1,
          reason: 'Error',
          message: `last words${CLEAR}`,
          containerID: 'containerd://c0',
        },
      };
    }
    return pod;
  }

  it('describe shows escapes, and keeps its columns aligned', () => {
    const out = describePod(hostilePod(), NOW);
    assert.doesNotMatch(out, ACTIVE);
    assert.match(out, /note: \^\[\[2J\^\[\[Hhello\^\[\]0;pwned\\x07/);
    assert.match(out, /GREETING: +hi\\rFAKE LINE\\u009b31m/);
    assert.match(out, /Message: +last words\^\[\[2J\^\[\[H/);
    // The value column starts at the same place for every top-level label (escapes measured).
    const starts = out
      .split('\n')
      .filter((l) => /^(Name|Namespace|Annotations|Status):/.test(l))
      .map((l) => l.search(/ \S/));
    assert.equal(new Set(starts).size, 1, out);
  });

  it('get pods (table, wide, name, json, yaml) shows no control, and JSON/YAML read back the same text', () => {
    const pod = hostilePod();
    const table = podTable([pod], { wide: true, allNamespaces: true }, NOW);
    assert.doesNotMatch(table, ACTIVE);
    assert.match(table, /CrashLoopBackOff\^\[\[2J\^\[\[H/);
    for (const format of ['json', 'yaml', 'name'] as const) {
      assert.doesNotMatch(formatPods([pod], format, true).replace(/\n/g, ''), ACTIVE, format);
    }
    const json = JSON.parse(formatPods([pod], 'json', true)) as Pod;
    assert.equal(json.spec.containers[0]?.env?.[0]?.value, `hi\rFAKE LINE${CSI8}`);
    const yaml = parse(formatPods([pod], 'yaml', true)) as Pod;
    assert.equal(yaml.metadata.annotations?.['note'], `${CLEAR}hello${TITLE}`);
  });

  it("why and timeline show a container's log lines and errors escaped", () => {
    const why = formatWhy({
      ...CANNED_WHY,
      findings: [
        {
          reason: 'CrashLoopBackOff',
          container: 'main',
          message: `exited${CSI8}`,
          evidence: { lastLogLines: [`boom${CLEAR}`, `${TITLE}bang`] },
        },
      ],
    });
    assert.doesNotMatch(why, ACTIVE);
    assert.match(why, /boom\^\[\[2J\^\[\[H\n/);
    const timeline = formatTimeline({
      ...CANNED_TIMELINE,
      attempts: [
        {
          attempt: 1,
          steps: [{ step: 'failed', at: '2026-11-24T20:00:00Z', offsetMs: 3, error: `denied${CLEAR}` }],
        },
      ],
    });
    assert.doesNotMatch(timeline, ACTIVE);
    assert.match(timeline, /error: denied\^\[\[2J\^\[\[H\n/);
  });
});
