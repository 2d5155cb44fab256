import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { digestedName, makeCsrPem, newPrivateKeyPem } from './csr.ts';

const run = promisify(execFile);

/** openssl's reading of a CSR: it verifies the self-signature and prints the fields. */
async function opensslText(pem: string): Promise<string> {
  const child = run('openssl', ['req', '-noout', '-verify', '-text']);
  child.child.stdin?.end(pem);
  const { stdout, stderr } = await child;
  return stdout + stderr;
}

describe('makeCsrPem', () => {
  it('writes a PKCS#10 request openssl verifies, with O before CN and the SANs requested', async () => {
    const key = createPrivateKey(newPrivateKeyPem());
    const pem = makeCsrPem(key, {
      commonName: 'system:node:n1',
      organization: ['system:nodes'],
      dnsNames: ['n1', 'n1.example'],
      ips: ['10.0.0.5', 'fd00::1'],
    });
    const text = await opensslText(pem);
    assert.match(text, /verify OK/);
    assert.match(text, /Subject: O = system:nodes, CN = system:node:n1/);
    assert.match(text, /ASN1 OID: prime256v1/);
    assert.match(text, /DNS:n1, DNS:n1.example, IP Address:10.0.0.5, IP Address:FD00:0:0:0:0:0:0:1/);
    assert.match(text, /Signature Algorithm: ecdsa-with-SHA256/);
  });

  it('writes a client request without an extension request', async () => {
    const key = createPrivateKey(newPrivateKeyPem());
    const text = await opensslText(
      makeCsrPem(key, { commonName: 'system:node:n1', organization: ['system:nodes'] }),
    );
    assert.match(text, /verify OK/);
    assert.doesNotMatch(text, /Subject Alternative Name/);
  });

  it('names a request after its key, subject and usages', () => {
    const a = createPrivateKey(newPrivateKeyPem());
    const b = createPrivateKey(newPrivateKeyPem());
    const t = { commonName: 'system:node:n1', organization: ['system:nodes'] };
    assert.equal(digestedName(a, t, ['client auth']), digestedName(a, t, ['client auth']));
    assert.notEqual(digestedName(a, t, ['client auth']), digestedName(b, t, ['client auth']));
    assert.notEqual(digestedName(a, t, ['client auth']), digestedName(a, t, ['server auth']));
  });
});
