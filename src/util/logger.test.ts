import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { goQuote } from './go-quote.ts';
import { createLogger, parseVmodule, type LoggerOptions } from './logger.ts';

/**
 * Lines the upstream kubelet 1.20.2 wrote on the bed (2026-11-28, joined by the kubeadm harness,
 * test/harness/kubeadm), kept verbatim: the golden reference for the text format.
 */
const UPSTREAM = {
  structured:
    'I1128 15:12:28.909171     938 event.go:291] "Event occurred" object="up-serving" kind="Node" apiVersion="" type="Normal" reason="Starting" message="Starting kubelet."',
  warning:
    'W1128 15:12:28.906508     938 probe.go:268] Flexvolume plugin directory at /var/lib/tskubelet-bed/kubeadm-nodes/up-serving/var/lib/kubelet/volume-plugins does not exist. Recreating.',
  error:
    'E1128 15:12:28.951153     938 nodelease.go:49] failed to get node "up-serving" when trying to set owner ref to the node lease: nodes "up-serving" not found',
};

/** klog's header, as log pipelines parse it (fluent-bit's and Vector's klog parsers read these groups). */
const KLOG_LINE =
  /^(?<severity>[IWEF])(?<month>\d\d)(?<day>\d\d) (?<time>\d\d:\d\d:\d\d\.\d{6}) (?<pid>[ \d]{7}) (?<file>[^ \]:]+):(?<line>\d+)\] (?<text>.*)$/;

function parse(line: string) {
  const m = KLOG_LINE.exec(line);
  assert.ok(m?.groups, `not a klog line: ${line}`);
  return m.groups as Record<'severity' | 'month' | 'day' | 'time' | 'pid' | 'file' | 'line' | 'text', string>;
}

/** 2026-11-28T15:12:28.909171Z in microseconds. */
const AT = Date.UTC(2026, 10, 28, 15, 12, 28, 909) * 1000 + 171;

function capture(opts: Partial<LoggerOptions> = {}) {
  const lines: string[] = [];
  const logger = createLogger({
    verbosity: 0,
    format: 'text',
    destination: { write: (l: string) => lines.push(l) },
    pid: 938,
    nowMicros: () => AT,
    timezoneOffset: () => 0,
    ...opts,
  });
  return { logger, lines };
}

void describe('text format: klog header and structured fields', () => {
  void it('writes an event line byte for byte as the upstream kubelet does, but for the file:line', () => {
    const { logger, lines } = capture();
    logger.info('Event occurred', {
      object: 'up-serving',
      kind: 'Node',
      apiVersion: '',
      type: 'Normal',
      reason: 'Starting',
      message: 'Starting kubelet.',
    });
    assert.equal(lines.length, 1);
    const ours = parse(lines[0]!.replace(/\n$/, ''));
    const theirs = parse(UPSTREAM.structured);
    assert.deepEqual({ ...ours, file: '', line: '' }, { ...theirs, file: '', line: '' });
  });

  void it('parses as the upstream warning and error lines do, with the same severity letters', () => {
    const { logger, lines } = capture();
    logger.warn('Flexvolume plugin directory does not exist; recreating', { dir: '/x' });
    logger.error('failed to get node', {
      node: 'up-serving',
      err: new Error('nodes "up-serving" not found'),
    });
    const [w, e] = lines.map((l) => parse(l.trimEnd()));
    assert.equal(w?.severity, parse(UPSTREAM.warning).severity);
    assert.equal(e?.severity, parse(UPSTREAM.error).severity);
    assert.equal(e?.text, '"failed to get node" node="up-serving" err="nodes \\"up-serving\\" not found"');
  });

  void it('names the calling file and line, not the logger', () => {
    const { logger, lines } = capture();
    const callLine = Number(new Error().stack?.split('\n')[1]?.match(/:(\d+):\d+\)?$/)?.[1]) + 1;
    logger.info('here');
    const h = parse(lines[0]!.trimEnd());
    assert.equal(h.file, 'logger.test.ts');
    assert.equal(Number(h.line), callLine);
  });

  void it('leaves a stack-trace hook installed by someone else (source maps) in place', () => {
    const { logger } = capture();
    const hook = (_e: Error, sites: NodeJS.CallSite[]) => `hooked ${sites.length}`;
    const before = Object.getOwnPropertyDescriptor(Error, 'prepareStackTrace');
    Error.prepareStackTrace = hook;
    try {
      logger.info('x');
      assert.equal(Object.getOwnPropertyDescriptor(Error, 'prepareStackTrace')?.value, hook);
      assert.match(String(new Error('e').stack), /^hooked/);
    } finally {
      if (before) Object.defineProperty(Error, 'prepareStackTrace', before);
      else Reflect.deleteProperty(Error, 'prepareStackTrace');
    }
  });

  void it('quotes the message and string fields as Go %q; numbers, booleans bare; objects as JSON', () => {
    const { logger, lines } = capture();
    logger.child({ pod: 'default/web' }).info('line one\nline "two"\ttab\x01', {
      count: 3,
      ok: false,
      ratio: 0.5,
      list: ['a', 1],
      obj: { a: 'b' },
      missing: undefined,
      none: null,
    });
    assert.equal(
      parse(lines[0]!.trimEnd()).text,
      '"line one\\nline \\"two\\"\\ttab\\x01" pod="default/web" count=3 ok=false ratio=0.5 list=["a",1] obj={"a":"b"} missing=(MISSING) none=<nil>',
    );
    assert.equal(goQuote('a\\b\x7f\r'), '"a\\\\b\\x7f\\r"');
  });

  void it('writes local time: the zone offset moves the clock and the date', () => {
    // 23:30 UTC on Nov 28 is 00:30 on Nov 29 at UTC+1 (getTimezoneOffset -60).
    const late = Date.UTC(2026, 10, 28, 23, 30, 0, 0) * 1000 + 42;
    const { logger, lines } = capture({ nowMicros: () => late, timezoneOffset: () => -60 });
    logger.info('x');
    const h = parse(lines[0]!.trimEnd());
    assert.deepEqual([h.month, h.day, h.time], ['11', '29', '00:30:00.000042']);
  });

  void it('shows debug lines from -v 4 and trace lines from -v 5, as upstream V(4)/V(5)', () => {
    for (const [v, want] of [
      [2, ['info']],
      [3, ['info']],
      [4, ['info', 'debug']],
      [5, ['info', 'debug', 'trace']],
    ] as const) {
      const { logger, lines } = capture({ verbosity: v });
      logger.info('info');
      logger.debug('debug');
      logger.trace('trace');
      assert.deepEqual(
        lines.map((l) => JSON.parse(parse(l.trimEnd()).text) as string),
        want,
        `-v ${v}`,
      );
      assert.equal(logger.isDebugEnabled(), v >= 4);
      // klog has no debug letter: a V(4) line is an I line.
      assert.ok(lines.every((l) => l.startsWith('I')));
    }
  });
});

void describe('json format: component-base/logs/json fields', () => {
  void it('writes ts (epoch ms), caller, msg, v, then the fields; an Error field as its message', () => {
    const { logger, lines } = capture({ format: 'json', verbosity: 4 });
    logger.child({ pod: 'default/web' }).error('sync failed', { err: new Error('boom'), attempt: 2 });
    logger.debug('detail');
    assert.equal(lines.length, 2);
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.deepEqual(Object.keys(first), ['ts', 'caller', 'msg', 'v', 'pod', 'err', 'attempt']);
    assert.equal(first.ts, AT / 1000);
    assert.match(String(first.caller), /^logger\.test\.ts:\d+$/);
    assert.deepEqual(
      { msg: first.msg, v: first.v, pod: first.pod, err: first.err, attempt: first.attempt },
      { msg: 'sync failed', v: 0, pod: 'default/web', err: 'boom', attempt: 2 },
    );
    assert.equal((JSON.parse(lines[1]!) as { v: number }).v, 4);
  });

  void it('keeps the line when a field cannot be encoded, and says why', () => {
    const { logger, lines } = capture({ format: 'json' });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    logger.info('odd field', { cyclic });
    const line = JSON.parse(lines[0]!) as { msg: string; logError?: string };
    assert.equal(line.msg, 'odd field');
    assert.match(line.logError ?? '', /circular/i);
  });
});

void describe('--vmodule: per-file verbosity, as klog', () => {
  void it('shows debug lines from the files a pattern names, and only from them', () => {
    const { logger, lines } = capture({ verbosity: 0, vmodule: parseVmodule('logger.test=4') });
    logger.debug('from this file');
    assert.equal(lines.length, 1);
    assert.equal(logger.isDebugEnabled(), true);
    const other = capture({ verbosity: 0, vmodule: parseVmodule('pod-worker*=5,kubelet=4') });
    other.logger.debug('not from a named file');
    assert.deepEqual(other.lines, []);
    assert.equal(other.logger.isDebugEnabled(), false);
  });

  void it('can also lower a file below -v; the first matching pattern wins', () => {
    const { logger, lines } = capture({ verbosity: 4, vmodule: parseVmodule('logger.t?st=0,logger*=5') });
    logger.debug('quiet here');
    logger.info('still shown');
    assert.deepEqual(
      lines.map((l) => JSON.parse(parse(l.trimEnd()).text) as string),
      ['still shown'],
    );
  });

  void it('matches a pattern with a slash against the path, globs never across a slash', () => {
    const here = import.meta.dirname;
    const { logger, lines } = capture({ verbosity: 0, vmodule: parseVmodule(`${here}/logger.test=4`) });
    logger.debug('by path');
    assert.equal(lines.length, 1);
    const noCross = capture({ verbosity: 0, vmodule: parseVmodule('*/logger.test=4') });
    noCross.logger.debug('a star does not cross a slash');
    assert.deepEqual(noCross.lines, []);
  });

  void it('rejects what klog rejects, naming the entry', () => {
    assert.deepEqual(
      parseVmodule('a=1,,b*=2').map((r) => [r.pattern, r.verbosity]),
      [
        ['a', 1],
        ['b*', 2],
      ],
    );
    for (const bad of ['a', '=2', 'a=x', 'a=-1', 'a=1.5']) {
      assert.throws(
        () => parseVmodule(bad),
        new RegExp(`--vmodule: "${bad.replace(/[.*+?^$]/g, '\\$&')}" is not pattern=N`),
      );
    }
  });
});
