/**
 * Manifest text → JSON value. JSON is tried first (exact and fast); anything else is read as YAML
 * 1.1, the dialect upstream's YAML-to-JSON step speaks (so `defaultMode: 0644` is octal 420 and
 * `yes`/`no` are booleans), minus the 1.1 timestamp and sexagesimal forms, which upstream's
 * converter leaves as strings.
 */
import { parseAllDocuments, type Tags } from 'yaml';
import { describeError, KubeletError } from '../util/errors.ts';

function yaml11Tags(tags: Tags): Tags {
  return tags.filter((t) => {
    const tag = typeof t === 'object' && 'tag' in t ? t : undefined;
    if (!tag) return true;
    if (tag.tag === 'tag:yaml.org,2002:timestamp') return false;
    return !('format' in tag && tag.format === 'TIME');
  });
}

/**
 * Parses one manifest. Exactly one non-empty document is allowed (a trailing `---` is fine);
 * several documents, a syntax error or an empty text throw `KubeletError('InvalidArgument')`.
 */
export function parseManifest(text: string, origin: string): unknown {
  const op = `parse manifest ${origin}`;
  const trimmed = text.trim();
  if (trimmed === '') throw new KubeletError('InvalidArgument', op, 'manifest is empty');
  if (trimmed.startsWith('{')) {
    try {
      return JSON.parse(trimmed) as unknown;
    } catch (err) {
      // Not strict JSON; YAML (a superset in practice) gets a second chance and reports its own error.
      void err;
    }
  }
  const docs = parseAllDocuments(text, { version: '1.1', customTags: yaml11Tags, prettyErrors: false });
  if (!Array.isArray(docs)) throw new KubeletError('InvalidArgument', op, 'unexpected YAML stream');
  const values: unknown[] = [];
  for (const doc of docs) {
    const first = doc.errors[0];
    if (first) throw new KubeletError('InvalidArgument', op, `YAML: ${first.message}`, { cause: first });
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      throw new KubeletError('InvalidArgument', op, `YAML: ${describeError(err)}`, { cause: err });
    }
    if (value !== null && value !== undefined) values.push(value);
  }
  if (values.length === 0) throw new KubeletError('InvalidArgument', op, 'manifest is empty');
  if (values.length > 1) {
    throw new KubeletError(
      'InvalidArgument',
      op,
      `manifest holds ${values.length} YAML documents; one Pod per manifest is supported`,
    );
  }
  return values[0];
}
