/**
 * A minimal HTTP(S) client for the bed's health checks and readiness waits (no client library:
 * the bed must work before, and independently of, whatever the kubelet under test uses).
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFile } from 'node:fs/promises';
import { KubeletError } from '../../../src/util/errors.ts';
import type { KeyPair } from './certs.ts';

export interface TlsFiles {
  caFile?: string;
  client?: KeyPair;
  /** Skip server verification (components' self-signed health endpoints). */
  insecure?: boolean;
}

export interface HttpResponse {
  status: number;
  body: string;
}

export interface HttpRequestOptions {
  method?: string;
  body?: string;
  tls?: TlsFiles;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** One request; rejects on a transport error or timeout, resolves with any HTTP status. */
export async function httpCall(url: string, opts: HttpRequestOptions = {}): Promise<HttpResponse> {
  const u = new URL(url);
  const tls = opts.tls ?? {};
  const [ca, cert, key] = await Promise.all([
    tls.caFile ? readFile(tls.caFile) : undefined,
    tls.client ? readFile(tls.client.cert) : undefined,
    tls.client ? readFile(tls.client.key) : undefined,
  ]);
  const op = `${opts.method ?? 'GET'} ${url}`;
  return new Promise((resolve, reject) => {
    const common = {
      method: opts.method ?? 'GET',
      headers: opts.body !== undefined ? { 'content-type': 'application/json' } : {},
      timeout: opts.timeoutMs ?? 5_000,
      signal: opts.signal,
    };
    const req =
      u.protocol === 'https:'
        ? httpsRequest(u, { ...common, ca, cert, key, rejectUnauthorized: !tls.insecure, agent: false })
        : httpRequest(u, { ...common, agent: false });
    req.once('timeout', () =>
      req.destroy(new KubeletError('DeadlineExceeded', op, `no answer within ${opts.timeoutMs ?? 5_000} ms`)),
    );
    req.once('error', (err) =>
      reject(
        err instanceof KubeletError ? err : new KubeletError('Unavailable', op, err.message, { cause: err }),
      ),
    );
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('error', (err) => reject(new KubeletError('Unavailable', op, err.message, { cause: err })));
      res.once('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.end(opts.body);
  });
}

/** True when `url` answers 200 (any transport error or other status is false). */
export async function answers200(url: string, tls?: TlsFiles, timeoutMs = 2_000): Promise<boolean> {
  try {
    return (await httpCall(url, { tls, timeoutMs })).status === 200;
  } catch {
    // Not answering is an expected state (starting, stopped): the answer is `false`.
    return false;
  }
}
