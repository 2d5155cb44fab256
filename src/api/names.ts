/**
 * Kubernetes name syntax (k8s.io/apimachinery/pkg/util/validation): DNS-1123 labels and
 * subdomains, qualified names (label and annotation keys, taint keys) and label values. Predicates
 * only say yes or no; callers word their own messages (pod validation speaks upstream's field
 * errors, the kubelet configuration names its flag or field).
 */

export const DNS1123_LABEL_MAX_LENGTH = 63; // DNS1123LabelMaxLength
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253; // DNS1123SubdomainMaxLength
export const QUALIFIED_NAME_MAX_LENGTH = 63; // qualifiedNameMaxLength
export const LABEL_VALUE_MAX_LENGTH = 63; // LabelValueMaxLength

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

/** IsDNS1123Label: at most 63 lowercase alphanumerics or '-', alphanumeric at both ends. */
export function isDNS1123Label(v: string): boolean {
  return v.length <= DNS1123_LABEL_MAX_LENGTH && DNS1123_LABEL.test(v);
}

/** IsDNS1123Subdomain: at most 253 characters, DNS-1123 labels joined by '.' (no per-label limit). */
export function isDNS1123Subdomain(v: string): boolean {
  return v.length <= DNS1123_SUBDOMAIN_MAX_LENGTH && DNS1123_SUBDOMAIN.test(v);
}

/**
 * A DNS-1123 subdomain whose every label is also at most 63 characters: what a resolver accepts
 * as a domain name (stricter than upstream's IsDNS1123Subdomain).
 */
export function isDNSDomainName(v: string): boolean {
  return v.length <= DNS1123_SUBDOMAIN_MAX_LENGTH && v.split('.').every(isDNS1123Label);
}

/** The name part of a qualified name: at most 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends. */
export function isQualifiedNamePart(v: string): boolean {
  return v.length <= QUALIFIED_NAME_MAX_LENGTH && QUALIFIED_NAME_PART.test(v);
}

/** IsQualifiedName exactly as upstream: `[prefix/]name`, the prefix a DNS-1123 subdomain. */
export function isQualifiedName(v: string): boolean {
  const parts = v.split('/');
  if (parts.length > 2) return false;
  if (parts.length === 2 && !isDNS1123Subdomain(parts[0] ?? '')) return false;
  return isQualifiedNamePart(parts.at(-1) ?? '');
}

/** IsValidLabelValue: empty, or a qualified name part. */
export function isLabelValue(v: string): boolean {
  return v === '' || isQualifiedNamePart(v);
}

/**
 * What is wrong with a qualified name (label key, taint key): an optional DNS-1123 subdomain
 * prefix and `/`, then a name of at most 63 characters (IsQualifiedName). Each problem is a
 * phrase that reads after the word "key"; empty when the name is valid.
 */
export function qualifiedNameProblems(key: string): string[] {
  const parts = key.split('/');
  const name = parts[parts.length - 1] ?? '';
  const problems: string[] = [];
  if (parts.length > 2) {
    return [`${JSON.stringify(key)} has more than one "/" (want [prefix/]name)`];
  }
  if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    if (prefix === '') problems.push(`${JSON.stringify(key)} has an empty prefix before "/"`);
    else if (!isDNSDomainName(prefix)) {
      problems.push(`prefix ${JSON.stringify(prefix)} is not a lowercase DNS-1123 subdomain`);
    }
  }
  if (name === '') problems.push(`${JSON.stringify(key)} has an empty name`);
  else if (name.length > QUALIFIED_NAME_MAX_LENGTH) {
    problems.push(`name ${JSON.stringify(name)} is longer than ${QUALIFIED_NAME_MAX_LENGTH} characters`);
  } else if (!isQualifiedNamePart(name)) {
    problems.push(
      `name ${JSON.stringify(name)} may only hold letters, digits, "-", "_" and "." ` +
        'and must begin and end with a letter or digit',
    );
  }
  return problems;
}

/** What is wrong with a label value (IsValidLabelValue), as phrases after the word "value". */
export function labelValueProblems(value: string): string[] {
  if (value === '') return [];
  if (value.length > LABEL_VALUE_MAX_LENGTH) return [`is longer than ${LABEL_VALUE_MAX_LENGTH} characters`];
  if (!isQualifiedNamePart(value)) {
    return ['may only hold letters, digits, "-", "_" and "." and must begin and end with a letter or digit'];
  }
  return [];
}
