/**
 * Test helpers for src/certificate (not exported from index.ts): a throw-away CA that signs CSRs
 * with the `openssl` command (as src/server/serving-cert.ts makes its pairs), and a fake
 * certificates.k8s.io/v1 API on top of FakeApi that keeps CSR objects and lets the test approve,
 * deny, fail or issue them.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { promisify } from 'node:util';
import type { ApiRequest } from '../api/client-types.ts';
import { FakeApi, apiError } from '../api/testing.ts';
import { makeSelfSignedPair } from '../server/serving-cert.ts';
import { nullLogger } from '../util/logger.ts';
import { CSR_PATH, type CsrObject } from './request.ts';

const run = promisify(execFile);

export interface TestCA {
  dir: string;
  caFile: string;
  /** Signs a PEM CSR for `days` (negative: already expired); `ext` lines for an extfile. */
  sign(csrPem: string, days?: number, ext?: string): Promise<string>;
  cleanup(): Promise<void>;
}

export async function makeTestCA(): Promise<TestCA> {
  const dir = await mkdtemp(join(tmpdir(), 'tskubelet-cert-'));
  const caFile = join(dir, 'ca.crt');
  const caKey = join(dir, 'ca.key');
  await makeSelfSignedPair({ keyFile: caKey, certFile: caFile, subject: '/CN=test-ca', days: 3 });
  let n = 0;
  return {
    dir,
    caFile,
    async sign(csrPem, days = 1, ext) {
      const i = n++;
      const csr = join(dir, `req-${i}.csr`);
      const out = join(dir, `req-${i}.crt`);
      await writeFile(csr, csrPem);
      const extArgs: string[] = [];
      if (ext) {
        await writeFile(join(dir, `ext-${i}`), ext);
        extArgs.push('-extfile', join(dir, `ext-${i}`));
      }
      await run('openssl', [
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        caFile,
        '-CAkey',
        caKey,
        '-CAcreateserial',
        '-days',
        String(days),
        '-out',
        out,
        ...extArgs,
      ]);
      return readFile(out, 'utf8');
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * The test CA of a whole test file: called at its top level, it makes the CA before the file's
 * first test and removes it (with everything under it) after the last; `subdir(prefix)` names a
 * fresh directory under it (not made) for one test.
 */
export function testCAForFile(): TestCA & { subdir(prefix: string): string } {
  let made: TestCA | undefined;
  let n = 0;
  before(async () => {
    made = await makeTestCA();
  });
  after(async () => {
    await made?.cleanup();
  });
  const get = (): TestCA => {
    if (!made) throw new Error('the test CA is made in the before hook, which has not run');
    return made;
  };
  return {
    get dir() {
      return get().dir;
    },
    get caFile() {
      return get().caFile;
    },
    sign: (csrPem, days, ext) => get().sign(csrPem, days, ext),
    cleanup: () => get().cleanup(),
    subdir: (prefix) => join(get().dir, `${prefix}-${n++}`),
  };
}

/** A CSR object as the fake API server keeps it. */
export interface StoredCsr {
  name: string;
  uid: string;
  signerName: string;
  usages: string[];
  csrPem: string;
  conditions: { type: string; reason?: string; message?: string }[];
  certificate?: string;
}

/**
 * A FakeApi answering POST/GET on certificatesigningrequests from `csrs`. `onCreate` runs for each
 * new object (e.g. approve and issue at once). `down` > 0 makes that many next requests fail as
 * an unreachable server would.
 */
export class FakeCsrApi extends FakeApi {
  readonly csrs = new Map<string, StoredCsr>();
  down = 0;
  onCreate: ((csr: StoredCsr) => void | Promise<void>) | undefined;
  private seq = 0;

  constructor() {
    super();
    this.respond('POST', CSR_PATH, (req: ApiRequest) => this.create(req));
    this.respond('GET', new RegExp(`^${CSR_PATH}/`), (req: ApiRequest) => this.get(req));
  }

  private unreachable(): Error | undefined {
    if (this.down <= 0) return undefined;
    this.down--;
    return apiError(503, 'ServiceUnavailable', 'connect ECONNREFUSED');
  }

  private async create(req: ApiRequest): Promise<unknown> {
    const down = this.unreachable();
    if (down) return down;
    const body = req.body as {
      metadata: { name?: string; generateName?: string };
      spec: { request: string; signerName: string; usages: string[] };
    };
    const name = body.metadata.name ?? `${body.metadata.generateName ?? 'csr-'}${++this.seq}`;
    if (this.csrs.has(name))
      return apiError(409, 'AlreadyExists', `certificatesigningrequests "${name}" already exists`);
    const csr: StoredCsr = {
      name,
      uid: `uid-${name}-${++this.seq}`,
      signerName: body.spec.signerName,
      usages: body.spec.usages,
      csrPem: Buffer.from(body.spec.request, 'base64').toString('utf8'),
      conditions: [],
    };
    this.csrs.set(name, csr);
    await this.onCreate?.(csr);
    return toObject(csr);
  }

  private get(req: ApiRequest): unknown {
    const down = this.unreachable();
    if (down) return down;
    const name = req.path.slice(CSR_PATH.length + 1);
    const csr = this.csrs.get(name);
    if (!csr) return apiError(404, 'NotFound', `certificatesigningrequests "${name}" not found`);
    return toObject(csr);
  }
}

function toObject(c: StoredCsr): CsrObject {
  return {
    metadata: { name: c.name, uid: c.uid },
    spec: { request: Buffer.from(c.csrPem).toString('base64'), signerName: c.signerName, usages: c.usages },
    status: {
      conditions: c.conditions.map((x) => ({ ...x })),
      ...(c.certificate ? { certificate: Buffer.from(c.certificate).toString('base64') } : {}),
    },
  };
}

/** Approves `csr` and issues it from `ca` for `days`. */
export async function approveAndIssue(ca: TestCA, csr: StoredCsr, days = 1): Promise<void> {
  csr.conditions.push({ type: 'Approved', reason: 'AutoApproved', message: 'test' });
  csr.certificate = await ca.sign(csr.csrPem, days);
}

/** Writes a bootstrap kubeconfig (token auth, CA file) for `server`. */
export async function writeBootstrapKubeconfig(
  path: string,
  caFile: string,
  server = 'https://10.0.0.1:6443',
): Promise<void> {
  await writeFile(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: c',
      '  cluster:',
      `    server: ${server}`,
      `    certificate-authority: ${caFile}`,
      'users:',
      '- name: b',
      '  user:',
      '    token: abcdef.0123456789abcdef',
      'contexts:',
      '- name: x',
      '  context: {cluster: c, user: b}',
      'current-context: x',
      '',
    ].join('\n'),
  );
}

export { nullLogger };
