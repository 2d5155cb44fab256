import { KubeletError } from '../util/errors.ts';

const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/**
 * Parses a Kubernetes resource.Quantity (`100m`, `0.5`, `64Mi`, `1G`, `129e6`) to a number in base
 * units (cores for cpu, bytes for memory). Throws InvalidArgument naming `field`.
 */
export function parseQuantity(value: string | number, field: string): number {
  if (typeof value === 'number') return value;
  const m = /^([+-]?[0-9.]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$/.exec(value.trim());
  if (!m || m[1] === undefined || Number.isNaN(Number(m[1]))) {
    throw new KubeletError('InvalidArgument', 'parse quantity', `${field}: invalid quantity "${value}"`);
  }
  const n = Number(m[1]);
  if (m[2]) return n * 10 ** Number(m[2].slice(1));
  const suffix = m[3] ?? '';
  return n * (BINARY[suffix] ?? DECIMAL[suffix] ?? 1);
}

/** CPU quantity in millicores, rounded up as upstream MilliValue does. */
export function milliCPU(value: string | number, field: string): number {
  return Math.ceil(parseQuantity(value, field) * 1000 - 1e-9);
}
