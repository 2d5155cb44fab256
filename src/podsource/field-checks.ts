/**
 * The per-value checks pod validation is built from (upstream apimachinery validation and
 * pkg/apis/core/validation helpers): each appends a {@link FieldError} naming the field, in upstream's
 * wording, and never throws.
 */
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedNamePart } from '../api/names.ts';
import type { FieldError } from './field-errors.ts';

const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

export function dnsLabel(path: string, v: string, errs: FieldError[]): void {
  if (v.length > 63)
    errs.push({ path, type: 'Invalid', value: v, detail: 'must be no more than 63 characters' });
  else if (!isDNS1123Label(v)) errs.push({ path, type: 'Invalid', value: v, detail: LABEL_MSG });
}

export function dnsSubdomain(path: string, v: string, errs: FieldError[]): void {
  if (v.length > 253)
    errs.push({ path, type: 'Invalid', value: v, detail: 'must be no more than 253 characters' });
  else if (!isDNS1123Subdomain(v)) errs.push({ path, type: 'Invalid', value: v, detail: SUBDOMAIN_MSG });
}

export function qualifiedName(path: string, key: string, errs: FieldError[]): void {
  const slash = key.indexOf('/');
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix === '' || !isDNS1123Subdomain(prefix)) {
      errs.push({
        path,
        type: 'Invalid',
        value: key,
        detail: 'prefix part must be a lowercase RFC 1123 subdomain',
      });
      return;
    }
  }
  if (!isQualifiedNamePart(name)) {
    errs.push({
      path,
      type: 'Invalid',
      value: key,
      detail:
        "name part must consist of at most 63 alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    });
  }
}

export function isIanaSvcName(v: string): boolean {
  return v.length <= 15 && IANA_SVC_NAME.test(v) && /[a-z]/.test(v) && !v.includes('--');
}

export function oneOf(
  path: string,
  v: string | undefined,
  allowed: readonly string[],
  errs: FieldError[],
): void {
  if (v === undefined) return;
  if (!allowed.includes(v)) {
    errs.push({
      path,
      type: 'Unsupported',
      value: v,
      detail: `supported values: ${allowed.map((a) => JSON.stringify(a)).join(', ')}`,
    });
  }
}

export function atLeast(path: string, v: number | undefined, min: number, errs: FieldError[]): void {
  if (v !== undefined && v < min) {
    errs.push({ path, type: 'Invalid', value: v, detail: `must be greater than or equal to ${min}` });
  }
}

export function portNumber(path: string, v: number, errs: FieldError[]): void {
  if (v < 1 || v > 65535)
    errs.push({ path, type: 'Invalid', value: v, detail: 'must be between 1 and 65535, inclusive' });
}

export function namedOrNumberedPort(path: string, v: number | string, errs: FieldError[]): void {
  if (typeof v === 'number') portNumber(path, v, errs);
  else if (!isIanaSvcName(v)) {
    errs.push({
      path,
      type: 'Invalid',
      value: v,
      detail: 'must contain at least one letter and be a valid IANA_SVC_NAME',
    });
  }
}
