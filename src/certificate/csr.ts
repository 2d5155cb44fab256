/**
 * Keys and PKCS#10 certificate requests (upstream client-go util/cert MakeCSR / x509.CreateCertificateRequest,
 * util/keyutil MakeEllipticPrivateKeyPEM). Node makes and signs with ECDSA P-256 keys but has no
 * CSR writer; the DER here is the few structures RFC 2986 needs (subject, public key, a SAN
 * extension request, the signature), so no x509 library is loaded into the kubelet for it.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  type KeyObject,
} from 'node:crypto';
import { isIP } from 'node:net';
import { KubeletError, describeError } from '../util/errors.ts';

/** What a CSR asks for: the subject and, for a serving certificate, the names it is valid for. */
export interface CsrTemplate {
  commonName: string;
  organization: readonly string[];
  dnsNames?: readonly string[];
  ips?: readonly string[];
}

/** A new ECDSA P-256 private key as upstream writes one: PEM `EC PRIVATE KEY` (SEC 1). */
export function newPrivateKeyPem(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return privateKey.export({ type: 'sec1', format: 'pem' }).toString();
}

/** The private key in `pem` (the first key block), or undefined when there is none that parses. */
export function parsePrivateKey(pem: string): KeyObject | undefined {
  try {
    return createPrivateKey(pem);
  } catch {
    // Not a key (corrupt, truncated, a certificate only): the callers make a new one and say so.
    return undefined;
  }
}

/** The DER SubjectPublicKeyInfo of a private key's public half (upstream x509.MarshalPKIXPublicKey). */
export function publicKeyDer(key: KeyObject): Buffer {
  return createPublicKey(key).export({ type: 'spki', format: 'der' });
}

// --- DER ---

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
}

const seq = (...c: Buffer[]) => tlv(0x30, ...c);
const set = (...c: Buffer[]) => tlv(0x31, ...c);

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [40 * (parts[0] ?? 0) + (parts[1] ?? 0)];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

const OID_COMMON_NAME = '2.5.4.3';
const OID_ORGANIZATION = '2.5.4.10';
const OID_EXTENSION_REQUEST = '1.2.840.113549.1.9.14';
const OID_SUBJECT_ALT_NAME = '2.5.29.17';
const OID_ECDSA_WITH_SHA256 = '1.2.840.10045.4.3.2';

/** One RDN per attribute, O before CN: the order Go's pkix.Name.ToRDNSequence writes. */
function subjectName(t: CsrTemplate): Buffer {
  const rdn = (type: string, value: string) => set(seq(oid(type), tlv(0x0c, Buffer.from(value, 'utf8'))));
  return seq(...t.organization.map((o) => rdn(OID_ORGANIZATION, o)), rdn(OID_COMMON_NAME, t.commonName));
}

/** An IPv4 or IPv6 address as its 4 or 16 bytes. */
export function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  const [head = '', tail] = ip.split('::');
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  let h = groups(head);
  let t = tail === undefined ? [] : groups(tail);
  // An embedded IPv4 tail (::ffff:1.2.3.4) is two groups.
  const v4 = (g: string[]) => {
    const last = g.at(-1);
    if (last === undefined || isIP(last) !== 4) return g;
    const b = last.split('.').map(Number);
    return [
      ...g.slice(0, -1),
      (((b[0] ?? 0) << 8) | (b[1] ?? 0)).toString(16),
      (((b[2] ?? 0) << 8) | (b[3] ?? 0)).toString(16),
    ];
  };
  if (tail === undefined) h = v4(h);
  else t = v4(t);
  const fill = tail === undefined ? [] : new Array<string>(8 - h.length - t.length).fill('0');
  const all = [...h, ...fill, ...t];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

function extensionRequest(t: CsrTemplate): Buffer[] {
  const names = [
    ...(t.dnsNames ?? []).map((d) => tlv(0x82, Buffer.from(d, 'ascii'))),
    ...(t.ips ?? []).map((ip) => tlv(0x87, ipBytes(ip))),
  ];
  if (names.length === 0) return [];
  const san = seq(oid(OID_SUBJECT_ALT_NAME), tlv(0x04, seq(...names)));
  return [seq(oid(OID_EXTENSION_REQUEST), set(seq(san)))];
}

/**
 * A PEM `CERTIFICATE REQUEST` for `template`, signed with `key` (ECDSA P-256, SHA-256). SANs go
 * in an extensionRequest attribute, as Go's CreateCertificateRequest puts them.
 */
export function makeCsrPem(key: KeyObject, template: CsrTemplate): string {
  for (const ip of template.ips ?? []) {
    if (isIP(ip) === 0)
      throw new KubeletError('InvalidArgument', 'make certificate request', `not an IP: ${ip}`);
  }
  let der: Buffer;
  try {
    const info = seq(
      tlv(0x02, Buffer.from([0])),
      subjectName(template),
      publicKeyDer(key),
      tlv(0xa0, ...extensionRequest(template)),
    );
    const signature = sign('sha256', info, key);
    der = seq(info, seq(oid(OID_ECDSA_WITH_SHA256)), tlv(0x03, Buffer.from([0]), signature));
  } catch (err) {
    throw new KubeletError('Internal', 'make certificate request', describeError(err), { cause: err });
  }
  const b64 = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${b64}-----END CERTIFICATE REQUEST-----\n`;
}

/**
 * The CSR object's name for a node's client certificate (upstream bootstrap digestedName):
 * `node-csr-` + the SHA-512/256 of the public key, subject and usages, so a kubelet restarted
 * while its request is pending finds that request again instead of making another.
 */
export function digestedName(key: KeyObject, template: CsrTemplate, usages: readonly string[]): string {
  const hash = createHash('sha512-256');
  const write = (data: Buffer) => {
    hash.update(data.toString('base64url'));
    hash.update('|');
  };
  write(publicKeyDer(key));
  write(Buffer.from(template.commonName));
  for (const o of template.organization) write(Buffer.from(o));
  for (const u of usages) write(Buffer.from(u));
  return `node-csr-${hash.digest('base64url')}`;
}
