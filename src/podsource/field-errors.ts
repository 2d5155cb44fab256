/**
 * Field errors in the shape upstream's `field.Error` prints them, e.g.
 * `spec.containers[1].image: Required value` or
 * `spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`.
 */

export type FieldErrorType =
  'Required' | 'Invalid' | 'Unsupported' | 'Duplicate' | 'Forbidden' | 'NotFound' | 'TooLong' | 'TypeInvalid';

export interface FieldError {
  path: string;
  type: FieldErrorType;
  value?: unknown;
  detail?: string;
}

function renderValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined) return 'undefined';
  try {
    const s = JSON.stringify(v);
    return s.length > 80 ? `${s.slice(0, 77)}...` : s;
  } catch {
    // Not JSON-encodable (a cycle or a BigInt cannot come from our parsers, but stay total).
    return `<${typeof v}>`;
  }
}

export function formatFieldError(e: FieldError): string {
  const detail = e.detail ? `: ${e.detail}` : '';
  switch (e.type) {
    case 'Required':
      return `${e.path}: Required value${detail}`;
    case 'Invalid':
      return `${e.path}: Invalid value: ${renderValue(e.value)}${detail}`;
    case 'TypeInvalid':
      return `${e.path}: Invalid value: ${renderValue(e.value)}${detail}`;
    case 'Unsupported':
      return `${e.path}: Unsupported value: ${renderValue(e.value)}${detail}`;
    case 'Duplicate':
      return `${e.path}: Duplicate value: ${renderValue(e.value)}`;
    case 'Forbidden':
      return `${e.path}: Forbidden${detail}`;
    case 'NotFound':
      return `${e.path}: Not found: ${renderValue(e.value)}`;
    case 'TooLong':
      return `${e.path}: Too long${detail}`;
  }
}

/** All errors on one line, separated by `; ` (upstream prints an aggregate as `[a, b]`). */
export function formatFieldErrors(errs: readonly FieldError[]): string {
  return errs.map(formatFieldError).join('; ');
}

/** Builds `a.b[2].c` paths. */
export function child(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}
export function index(path: string, i: number): string {
  return `${path}[${i}]`;
}
