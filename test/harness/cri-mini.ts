/**
 * A deliberately tiny CRI client for the test bed: a handful of `runtime.v1.RuntimeService` calls,
 * encoded by hand, so the harness never depends on the kubelet's own CRI client (which is what the
 * tests exercise). Field numbers follow kubernetes/cri-api `pkg/apis/runtime/v1/api.proto`.
 */
import * as grpc from '@grpc/grpc-js';
import { KubeletError } from '../../src/util/errors.ts';

// ---- protobuf wire format: just strings, varints and nested messages ----

function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

function key(field: number, wireType: number): Buffer {
  return varint(field * 8 + wireType);
}

/** A string field; proto3 omits empty strings. */
export function pbString(field: number, s: string): Buffer {
  if (s === '') return Buffer.alloc(0);
  const b = Buffer.from(s, 'utf8');
  return Buffer.concat([key(field, 2), varint(b.length), b]);
}

/** A nested message field (always written, even empty, so presence is kept). */
export function pbMessage(field: number, parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([key(field, 2), varint(body.length), body]);
}

export function pbVarint(field: number, n: number): Buffer {
  if (n === 0) return Buffer.alloc(0);
  return Buffer.concat([key(field, 0), varint(n)]);
}

/** A `map<string,string>` entry. */
export function pbMapEntry(field: number, k: string, v: string): Buffer {
  return pbMessage(field, [pbString(1, k), pbString(2, v)]);
}

/** Decoded message: field number → raw values (varints as bigint, length-delimited as Buffer). */
export type Decoded = Map<number, (bigint | Buffer)[]>;

export function pbDecode(buf: Buffer): Decoded {
  const out: Decoded = new Map();
  let pos = 0;
  const readVarint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const b = buf[pos++] ?? 0;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const k = Number(readVarint());
    const field = k >>> 3;
    const wire = k & 7;
    let value: bigint | Buffer;
    switch (wire) {
      case 0:
        value = readVarint();
        break;
      case 1:
        value = buf.subarray(pos, pos + 8);
        pos += 8;
        break;
      case 2: {
        const len = Number(readVarint());
        value = buf.subarray(pos, pos + len);
        pos += len;
        break;
      }
      case 5:
        value = buf.subarray(pos, pos + 4);
        pos += 4;
        break;
      default:
        throw new Error(`unsupported wire type ${wire}`);
    }
    const list = out.get(field);
    if (list) list.push(value);
    else out.set(field, [value]);
  }
  return out;
}

const EMPTY: Decoded = new Map();

export function getString(m: Decoded, field: number): string {
  const v = m.get(field)?.[0];
  return Buffer.isBuffer(v) ? v.toString('utf8') : '';
}

export function getMessages(m: Decoded, field: number): Decoded[] {
  return (m.get(field) ?? []).filter((v): v is Buffer => Buffer.isBuffer(v)).map(pbDecode);
}

export function getVarint(m: Decoded, field: number): bigint {
  const v = m.get(field)?.[0];
  return typeof v === 'bigint' ? v : 0n;
}

// ---- calls ----

/** One unary call on `runtime.v1.RuntimeService`; a fresh channel each time (the bed is not hot). */
export function criCall(
  socket: string,
  method: string,
  request: Buffer,
  timeoutMs = 10_000,
): Promise<Decoded> {
  const op = `CRI ${method}`;
  const client = new grpc.Client(`unix://${socket}`, grpc.credentials.createInsecure());
  return new Promise<Decoded>((resolve, reject) => {
    client.makeUnaryRequest<Buffer, Buffer>(
      `/runtime.v1.RuntimeService/${method}`,
      (b) => b,
      (b) => b,
      request,
      new grpc.Metadata(),
      { deadline: new Date(Date.now() + timeoutMs) },
      (err, resp) => {
        client.close();
        if (err) {
          const code = err.code === grpc.status.NOT_FOUND ? 'NotFound' : 'Unavailable';
          reject(new KubeletError(code, op, err.details || err.message, { cause: err }));
          return;
        }
        try {
          resolve(pbDecode(resp ?? Buffer.alloc(0)));
        } catch (e) {
          reject(new KubeletError('Internal', op, `cannot decode response: ${String(e)}`, { cause: e }));
        }
      },
    );
  });
}

export interface CriVersion {
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

/** `Version`: succeeds only once the CRI plugin is initialized and serving. */
export async function criVersion(socket: string, timeoutMs = 5_000): Promise<CriVersion> {
  const r = await criCall(socket, 'Version', pbString(1, 'v1'), timeoutMs);
  return {
    runtimeName: getString(r, 2),
    runtimeVersion: getString(r, 3),
    runtimeApiVersion: getString(r, 4),
  };
}

export interface SandboxSummary {
  id: string;
  name: string;
  namespace: string;
  uid: string;
  /** 0 = SANDBOX_READY, 1 = SANDBOX_NOTREADY */
  state: number;
}

export async function listPodSandboxes(socket: string): Promise<SandboxSummary[]> {
  const r = await criCall(socket, 'ListPodSandbox', Buffer.alloc(0));
  return getMessages(r, 1).map((item) => {
    const meta = getMessages(item, 2)[0] ?? EMPTY;
    return {
      id: getString(item, 1),
      name: getString(meta, 1),
      uid: getString(meta, 2),
      namespace: getString(meta, 3),
      state: Number(getVarint(item, 3)),
    };
  });
}

export async function stopPodSandbox(socket: string, id: string, timeoutMs = 60_000): Promise<void> {
  await criCall(socket, 'StopPodSandbox', pbString(1, id), timeoutMs);
}

export async function removePodSandbox(socket: string, id: string, timeoutMs = 60_000): Promise<void> {
  await criCall(socket, 'RemovePodSandbox', pbString(1, id), timeoutMs);
}

/** A minimal `RunPodSandbox` (metadata, hostname, log directory, labels); returns the sandbox id. */
export async function runPodSandbox(
  socket: string,
  meta: {
    name: string;
    namespace: string;
    uid: string;
    logDirectory?: string;
    labels?: Record<string, string>;
  },
  timeoutMs = 60_000,
): Promise<string> {
  const config = pbMessage(1, [
    pbMessage(1, [pbString(1, meta.name), pbString(2, meta.uid), pbString(3, meta.namespace)]),
    pbString(2, meta.name),
    pbString(3, meta.logDirectory ?? ''),
    ...Object.entries(meta.labels ?? {}).map(([k, v]) => pbMapEntry(6, k, v)),
    pbMessage(8, []),
  ]);
  const r = await criCall(socket, 'RunPodSandbox', config, timeoutMs);
  return getString(r, 1);
}

/** `PodSandboxStatus` → the sandbox's primary IP ('' when it has none, e.g. host network). */
export async function podSandboxIp(socket: string, id: string): Promise<string> {
  const r = await criCall(socket, 'PodSandboxStatus', pbString(1, id));
  const status = getMessages(r, 1)[0] ?? EMPTY;
  const network = getMessages(status, 5)[0] ?? EMPTY;
  return getString(network, 1);
}
