import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { channelMessage, execOutcome, execPath } from './exec-client.ts';
import {
  FrameParser,
  OP_BINARY,
  OP_CONTINUATION,
  OP_PING,
  OP_TEXT,
  acceptFor,
  encodeFrame,
} from './websocket.ts';

const MASK = Buffer.from([1, 2, 3, 4]);

describe('websocket framing', () => {
  it('computes Sec-WebSocket-Accept as RFC 6455 section 1.3 does', () => {
    assert.equal(acceptFor('dGhlIHNhbXBsZSBub25jZQ=='), 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
  });

  it('masks client frames and the parser unmasks them, for 7-bit, 16-bit and 64-bit lengths', () => {
    for (const size of [0, 5, 125, 126, 65535, 65536, 70_000]) {
      const payload = Buffer.alloc(size, 0x61);
      const frame = encodeFrame(OP_BINARY, payload, MASK);
      assert.equal(frame[0], 0x82, 'FIN + binary');
      assert.equal((frame[1] ?? 0) & 0x80, 0x80, 'masked');
      const msgs = new FrameParser().push(frame);
      assert.equal(msgs.length, 1);
      assert.equal(msgs[0]?.opcode, OP_BINARY);
      assert.ok(msgs[0]?.data.equals(payload), `payload of ${size} bytes survives`);
    }
  });

  it('reassembles a message split across frames and across reads; control frames pass through between', () => {
    const first = Buffer.from([0x02, 3, 0x01, 0x41, 0x42]); // binary, not FIN, unmasked
    const ping = Buffer.from([0x89, 1, 0x70]);
    const last = Buffer.from([0x80, 2, 0x43, 0x44]); // continuation, FIN
    const bytes = Buffer.concat([first, ping, last]);
    const p = new FrameParser();
    const out = [];
    for (const b of bytes) out.push(...p.push(Buffer.from([b])));
    assert.deepEqual(
      out.map((m) => [m.opcode, m.data.toString('latin1')]),
      [
        [OP_PING, 'p'],
        [OP_BINARY, '\x01ABCD'],
      ],
    );
    assert.equal(OP_CONTINUATION, 0);
  });

  it('refuses protocol errors: a continuation without a message, an oversized message', () => {
    assert.throws(
      () => new FrameParser().push(Buffer.from([0x80, 0])),
      /continuation frame without a message/,
    );
    assert.throws(() => new FrameParser(10).push(encodeFrame(OP_TEXT, Buffer.alloc(11))), /too large/);
  });
});

describe('exec channel protocol', () => {
  it('prefixes each message with its channel byte', () => {
    assert.deepEqual([...channelMessage(0, 'hi')], [0, 0x68, 0x69]);
  });

  it('builds the kubelet exec path: one command parameter per argument; tty drops stderr', () => {
    const p = execPath({
      namespace: 'default',
      pod: 'web',
      container: 'c',
      command: ['sh', '-c', 'exit 3'],
      stdin: false,
      tty: false,
    });
    assert.equal(p, '/exec/default/web/c?command=sh&command=-c&command=exit+3&output=1&error=1');
    const t = execPath({
      namespace: 'ns',
      pod: 'p',
      container: 'c',
      command: ['sh'],
      stdin: true,
      tty: true,
    });
    assert.equal(t, '/exec/ns/p/c?command=sh&input=1&output=1&tty=1');
  });

  it('reads the exit code from the error channel (v4 Status), and reports other failures', () => {
    assert.deepEqual(execOutcome('v4.channel.k8s.io', ''), { exitCode: 0 });
    assert.deepEqual(execOutcome('v4.channel.k8s.io', '{"metadata":{},"status":"Success"}'), { exitCode: 0 });
    const three = JSON.stringify({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
    assert.deepEqual(execOutcome('v5.channel.k8s.io', three), { exitCode: 3 });
    assert.deepEqual(
      execOutcome(
        'v4.channel.k8s.io',
        JSON.stringify({ status: 'Failure', message: 'executable file not found' }),
      ),
      { error: 'executable file not found' },
    );
    assert.deepEqual(
      execOutcome('channel.k8s.io', 'command terminated with non-zero exit code: exit code 7'),
      {
        exitCode: 7,
      },
    );
    assert.deepEqual(execOutcome('channel.k8s.io', 'boom'), { error: 'boom' });
  });
});
