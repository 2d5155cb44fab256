import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRunArgs } from '../cli/flags.ts';
import { isLoopbackIP, parseConsoleAddress } from './console-address.ts';

void describe('--console-address', () => {
  void it('accepts loopback addresses with a port', () => {
    assert.deepEqual(parseConsoleAddress('127.0.0.1:10255'), {
      ok: true,
      address: { host: '127.0.0.1', port: 10255 },
    });
    assert.deepEqual(parseConsoleAddress('127.3.4.5:0'), {
      ok: true,
      address: { host: '127.3.4.5', port: 0 },
    });
    assert.deepEqual(parseConsoleAddress('[::1]:8080'), { ok: true, address: { host: '::1', port: 8080 } });
    assert.deepEqual(parseConsoleAddress('localhost:9000'), {
      ok: true,
      address: { host: '127.0.0.1', port: 9000 },
    });
  });

  void it('refuses any address another machine could reach, saying why', () => {
    for (const text of ['0.0.0.0:8080', '10.0.0.12:8080', '[::]:8080', 'example.com:80', '192.168.1.1:1']) {
      const r = parseConsoleAddress(text);
      assert.equal(r.ok, false, text);
      assert.match(
        !r.ok ? r.problem : '',
        /is not a loopback address: the console is served there without authentication/,
      );
    }
  });

  void it('refuses malformed values', () => {
    for (const text of ['127.0.0.1', ':8080', '127.0.0.1:99999', '::1:8080', '127.0.0.1:http']) {
      assert.equal(parseConsoleAddress(text).ok, false, text);
    }
  });

  void it('knows loopback IPs', () => {
    assert.ok(isLoopbackIP('127.0.0.1'));
    assert.ok(isLoopbackIP('::1'));
    assert.ok(!isLoopbackIP('128.0.0.1'));
    assert.ok(!isLoopbackIP('::'));
  });

  void it('is a flag of run: a loopback value compiles, another fails the start with the reason', async () => {
    const ok = await parseRunArgs(['--console-address', '127.0.0.1:10256']);
    assert.equal(ok.config.consoleAddress, '127.0.0.1:10256');
    assert.equal((await parseRunArgs([])).config.consoleAddress, undefined);
    await assert.rejects(
      parseRunArgs(['--console-address', '0.0.0.0:10256']),
      /--console-address: "0.0.0.0:10256": its host 0.0.0.0 is not a loopback address/,
    );
  });
});
