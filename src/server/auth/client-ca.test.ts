import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hasCode } from '../../util/errors.ts';
import { recordingLogger } from '../../util/testing.ts';
import { makeTestPki, type TestPki } from '../testing.ts';
import { loadClientCA, parseCABundle } from './client-ca.ts';

let dir: string;
let a: TestPki;
let b: TestPki;
const fingerprint = (pem: Buffer) => new X509Certificate(pem).fingerprint256;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tsk-client-ca-'));
  a = await makeTestPki(dir, 'ca-a');
  b = await makeTestPki(dir, 'ca-b');
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('parseCABundle', () => {
  it('reads every certificate of a bundle and skips other PEM blocks, as upstream', () => {
    const bundle = Buffer.concat([
      a.caCert,
      Buffer.from('-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n'),
      b.caCert,
    ]);
    assert.deepEqual([...parseCABundle(bundle)], [fingerprint(a.caCert), fingerprint(b.caCert)]);
  });

  it('refuses a bundle without a certificate, or with one that does not parse', () => {
    assert.throws(() => parseCABundle(Buffer.from('not a CA\n')), /holds no PEM certificate/);
    const broken = Buffer.from('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n');
    assert.throws(() => parseCABundle(Buffer.concat([a.caCert, broken])), /certificate 2 does not parse/);
  });
});

describe('the client CA file', () => {
  it('refuses to start on a missing or broken file, naming the field', async () => {
    for (const [content, why] of [
      [undefined, /ENOENT/],
      ['', /it is empty/],
      ['garbage', /holds no PEM certificate/],
    ] as const) {
      const path = join(dir, `start-${String(content)}.crt`);
      if (content !== undefined) await writeFile(path, content);
      await assert.rejects(loadClientCA({ path, logger: recordingLogger() }), (err: unknown) => {
        assert.ok(hasCode(err, 'InvalidArgument'));
        assert.match(String(err), /\(authentication\.x509\.clientCAFile\)/);
        assert.match(String(err), why);
        return true;
      });
    }
  });

  it('puts a changed file in force and tells the listeners; a broken one is logged and the CA in force stays', async () => {
    const path = join(dir, 'check.crt');
    await writeFile(path, a.caCert);
    const logger = recordingLogger();
    const ca = await loadClientCA({ path, logger });
    const seen: Buffer[] = [];
    ca.onChange((pem) => seen.push(pem));
    assert.deepEqual(ca.current(), a.caCert);

    await ca.check();
    assert.equal(seen.length, 0, 'the same content is no change');

    await writeFile(`${path}.tmp`, b.caCert);
    await rename(`${path}.tmp`, path);
    await ca.check();
    assert.deepEqual(seen, [b.caCert]);
    assert.deepEqual(ca.current(), b.caCert);
    assert.ok(logger.lines.some((l) => l.level === 'info' && l.msg === 'client CA reloaded'));

    for (const broken of ['', 'garbage', undefined]) {
      if (broken === undefined) await unlink(path);
      else await writeFile(path, broken);
      await ca.check();
      assert.equal(seen.length, 1, `no change for ${String(broken)}`);
      assert.deepEqual(ca.current(), b.caCert);
      const last = logger.lines.at(-1);
      assert.equal(last?.level, 'error');
      assert.equal(last?.msg, 'the client CA file cannot be used; the client CA in force stays');
      assert.equal(last?.fields.path, path);
    }
  });

  it('notices a change by itself once started (the directory is watched)', async () => {
    const path = join(dir, 'watched.crt');
    await writeFile(path, a.caCert);
    const ca = await loadClientCA({ path, logger: recordingLogger() });
    const changed = new Promise<Buffer>((resolve) => ca.onChange(resolve));
    ca.start();
    try {
      await writeFile(`${path}.tmp`, b.caCert);
      await rename(`${path}.tmp`, path);
      const pem = await Promise.race([
        changed,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no reload within 5 s')), 5_000)),
      ]);
      assert.deepEqual(pem, b.caCert);
    } finally {
      ca.stop();
    }
  });
});
