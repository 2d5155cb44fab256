import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  compareRuns,
  comparisonMarkdown,
  countOutcomes,
  decodeXml,
  failureReason,
  mergeReports,
  selects,
  summaryMarkdown,
} from './junit.ts';

const SEL = {
  focus: String.raw`\[NodeConformance\]`,
  skip: String.raw`\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]|\[Feature:`,
};

// As ginkgo 1.11's JUnit reporter writes it (encoding/xml, indented), trimmed.
const NODE1 = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuite name="Kubernetes e2e suite" tests="3" failures="1" errors="0" time="412.5">
      <testcase name="[k8s.io] Pods should get a host IP [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" time="8.2"></testcase>
      <testcase name="[k8s.io] Container Runtime blackbox test on terminated container should report termination message [LinuxOnly] if TerminationMessagePath is set [NodeConformance]" classname="Kubernetes e2e suite" time="305.1">
          <failure type="Failure">/workspace/src/k8s.io/kubernetes/_output/local/go/src/k8s.io/kubernetes/test/e2e/framework/util.go:742&#xA;Unexpected error:&#xA;    &lt;*errors.errorString | 0xc0010c4d40&gt;: {&#xA;        s: &#34;failed to get logs from pod-1 for c: the server rejected our request&#34;,&#xA;    }&#xA;    failed to get logs&#xA;occurred&#xA;/workspace/src/k8s.io/kubernetes/test/e2e/common/runtime.go:123</failure>
          <system-out>some output &amp; more</system-out>
      </testcase>
      <testcase name="[sig-storage] Volumes NFSv4 should be mountable for NFSv4" classname="Kubernetes e2e suite" time="0">
          <skipped></skipped>
      </testcase>
  </testsuite>`;

const NODE2 = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuite name="Kubernetes e2e suite" tests="2" failures="0" errors="0" time="100">
      <testcase name="[k8s.io] Security Context should run with uid 0 [LinuxOnly] [NodeConformance]" classname="Kubernetes e2e suite" time="2.5">
          <skipped></skipped>
      </testcase>
      <testcase name="[k8s.io] Probing container should be restarted [NodeConformance] [Slow]" classname="Kubernetes e2e suite" time="0">
          <skipped></skipped>
      </testcase>
      <testcase name="AfterSuite" classname="Kubernetes e2e suite" time="1">
          <failure type="Failure"><![CDATA[/x/e2e.go:12
namespaces left behind <&>]]></failure>
      </testcase>
  </testsuite>`;

describe('JUnit reports', () => {
  it('decodes entities and character references', () => {
    assert.equal(decodeXml('a &lt;b&gt; &amp; &#34;c&#34; &#xA;d &apos;'), 'a <b> & "c" \nd \'');
  });

  it('selects by focus and skip as ginkgo does', () => {
    assert.equal(selects(SEL, 'x [NodeConformance]'), true);
    assert.equal(selects(SEL, 'x [NodeConformance] [Slow]'), false);
    assert.equal(selects(SEL, 'x [Conformance]'), false);
    assert.equal(selects({ focus: '', skip: '' }, 'anything'), true);
  });

  it('merges the nodes of one run, drops filtered specs, marks missing ones not-run', () => {
    const missing = '[k8s.io] Pods should never run [NodeConformance]';
    const r = mergeReports([NODE1, NODE2], SEL, [missing]);
    assert.deepEqual(countOutcomes(r), { selected: 4, passed: 1, failed: 1, skipped: 1, notRun: 1 });
    assert.equal(r.specs.get(missing)?.outcome, 'not-run');
    assert.equal(r.specs.has('[sig-storage] Volumes NFSv4 should be mountable for NFSv4'), false);
    assert.equal(r.suiteFailures.length, 1);
    assert.match(r.suiteFailures[0]?.failure ?? '', /namespaces left behind <&>/);
  });

  it('says why a spec failed in one line, past the generic "Unexpected error:"', () => {
    const r = mergeReports([NODE1], SEL);
    const failed = [...r.specs.values()].find((s) => s.outcome === 'failed');
    assert.equal(
      failureReason(failed?.failure ?? ''),
      'Unexpected error: "failed to get logs from pod-1 for c: the server rejected our request",',
    );
    assert.equal(failureReason('/a/b.go:1\nNov 24 03:29:35.944: Boom.\n/a/c.go:2'), 'Boom.');
    assert.equal(
      failureReason(
        '/a/b.go:1\nNov 24 03:29:35.944: Timed out after 60.001s.\nExpected\n    <*errors.errorString | 0xc0008e00c0>: {\n        s: "no entries",\n    }\nto be nil\n/a/c.go:2',
      ),
      'Timed out after 60.001s. "no entries",',
    );
    assert.equal(failureReason(''), '(no failure message)');
    assert.equal(failureReason('x'.repeat(300)).length, 220);
  });

  it('prints the counts and each failure as a markdown table', () => {
    const md = summaryMarkdown('upstream', mergeReports([NODE1, NODE2], SEL, ['a [NodeConformance]']));
    assert.match(md, /\| 4 \| 1 \| 1 \| 1 \| 1 \|/);
    assert.match(md, /\| \[k8s\.io\] Container Runtime .* \| Unexpected error: "failed to get logs/);
    assert.match(md, /AfterSuite failed/);
    assert.match(md, /- a \[NodeConformance\]/);
  });

  it('lists the specs whose outcome differs between two runs', () => {
    const left = mergeReports([NODE1, NODE2], SEL);
    const right = mergeReports([NODE2], SEL, ['extra [NodeConformance]']);
    const diffs = compareRuns(left, right);
    assert.deepEqual(
      diffs.map((d) => [d.name.slice(0, 30), d.left, d.right]),
      [
        ['[k8s.io] Container Runtime bla', 'failed', 'absent'],
        ['[k8s.io] Pods should get a hos', 'passed', 'absent'],
        ['extra [NodeConformance]', 'absent', 'not-run'],
      ],
    );
    assert.match(comparisonMarkdown('upstream', 'tskubelet', diffs), /\| spec \| upstream \| tskubelet \|/);
    assert.match(comparisonMarkdown('a', 'b', []), /No spec has a different outcome/);
  });
});
