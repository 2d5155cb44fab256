/**
 * Manifest text → JSON value. A text starting with `{` is JSON (as upstream sniffs it); anything
 * else is read as YAML 1.1, the dialect upstream's YAML-to-JSON step speaks (so `defaultMode: 0644` is octal 420 and
 * `yes`/`no` are booleans), minus the 1.1 timestamp and sexagesimal forms, which upstream's
 * converter leaves as strings.
 */
import { LineCounter, parseAllDocuments, type Tags, type YAMLError } from 'yaml';
import { describeError, KubeletError } from '../util/errors.ts';
import { MAX_DOCUMENT_DEPTH, MAX_YAML_TEXT_DEPTH, tooDeepAt, yamlTooDeepAt } from '../api/nesting.ts';

function yaml11Tags(tags: Tags): Tags {
  return tags.filter((t) => {
    const tag = typeof t === 'object' && 'tag' in t ? t : undefined;
    if (!tag) return true;
    if (tag.tag === 'tag:yaml.org,2002:timestamp') return false;
    return !('format' in tag && tag.format === 'TIME');
  });
}

/** A YAML error as upstream's parser words it: `YAML: line 3, column 7: <what>`. */
function yamlError(op: string, err: YAMLError, lines: LineCounter): KubeletError {
  const { line, col } = lines.linePos(err.pos[0]);
  return new KubeletError('InvalidArgument', op, `YAML: line ${line}, column ${col}: ${err.message}`, {
    cause: err,
  });
}

function isStackOverflow(err: unknown): boolean {
  return (
    err instanceof RangeError ||
    (err instanceof Error && /Maximum call stack size exceeded/.test(err.message))
  );
}

/**
 * The YAML parser recurses; besides deep nesting (refused before parsing, see yamlTooDeepAt), a
 * long broken document (a flow collection left open early on) can exhaust the stack, thrown or
 * reported as an error of whichever node it was in — which depends on the caller's stack. Then
 * the first syntax error is looked for in shorter and shorter prefixes of the text, which the
 * parser gets through, so the refusal names a position that does not depend on the stack.
 */
function parserGaveUp(op: string, text: string, cause: unknown): KubeletError {
  const lines = text.split('\n');
  for (let n = Math.floor(lines.length / 2); n >= 1; n = Math.floor(n / 2)) {
    const counter = new LineCounter();
    let docs;
    try {
      docs = parseYaml(lines.slice(0, n).join('\n'), counter);
    } catch {
      continue;
    }
    const errors = (Array.isArray(docs) ? docs : []).flatMap((d) => d.errors);
    if (errors.some(isStackOverflow)) continue;
    const first = errors.find((e) => counter.linePos(e.pos[0]).line < n);
    if (first) return yamlError(op, first, counter);
    break;
  }
  return new KubeletError(
    'InvalidArgument',
    op,
    'YAML: the document is too deeply nested or too broken to parse',
    {
      cause,
    },
  );
}

/** Texts at least this long are probed for an early syntax error before the whole parse. */
const PROBE_MIN_CHARS = 256 * 1024;
const PROBE_CHARS = 32 * 1024;
/** A probe's error this close to its cut may come from the cut itself (an unfinished construct). */
const PROBE_MARGIN_CHARS = 4 * 1024;

/**
 * A long text's first syntax error, when it is in the text's first 28 KiB: found by parsing its
 * first 32 KiB alone. The parser reads left to right with bounded look-ahead (1 KiB
 * for an implicit key), so an error well before the cut is the full text's first error too; what
 * the cut itself breaks (an open string or bracket) is reported at the cut and is ignored here.
 * Why: after an early error the YAML parser recovers token by token, recording one error per
 * token — a broken first line before 1.3 MiB of JSON cost 300,000 errors and 3–12 s (found by the
 * fuzzer); the prefix costs milliseconds.
 */
export function earlyYamlError(op: string, text: string): KubeletError | undefined {
  if (text.length < PROBE_MIN_CHARS) return undefined;
  // Cut anywhere (a manifest may be one long line): what the cut splits errs at the cut.
  const cut = PROBE_CHARS;
  const lines = new LineCounter();
  let docs: ReturnType<typeof parseAllDocuments>;
  try {
    docs = parseYaml(text.slice(0, cut), lines);
  } catch {
    return undefined; // the whole parse will say
  }
  for (const doc of Array.isArray(docs) ? docs : []) {
    const first = doc.errors[0];
    if (!first) continue;
    const early = first.pos[0] < cut - PROBE_MARGIN_CHARS && !isStackOverflow(first);
    return early ? yamlError(op, first, lines) : undefined;
  }
  return undefined;
}

function parseYaml(text: string, lineCounter: LineCounter): ReturnType<typeof parseAllDocuments> {
  return parseAllDocuments(text, {
    version: '1.1',
    customTags: yaml11Tags,
    prettyErrors: false,
    lineCounter,
  });
}

/**
 * Where a text that is not valid JSON goes wrong: the length of its longest prefix that is still
 * the start of some JSON text. Whether a prefix is one is monotone in its length, so a binary
 * search over JSON.parse of prefixes finds it (each parse fails at the cut when the prefix is only
 * incomplete; V8 names the position, or says "end of JSON input").
 */
function jsonErrorAt(text: string): number {
  const incompleteOnly = (n: number): boolean => {
    try {
      JSON.parse(text.slice(0, n));
      return true;
    } catch (err) {
      const msg = err instanceof Error ? err.message : '';
      if (/end of JSON input/.test(msg)) return true;
      const pos = /at position (\d+)/.exec(msg);
      return pos !== null && Number(pos[1]) >= n;
    }
  };
  let good = 0;
  let bad = text.length;
  while (bad - good > 1) {
    const mid = Math.floor((good + bad) / 2);
    if (incompleteOnly(mid)) good = mid;
    else bad = mid;
  }
  return Math.min(good, Math.max(0, text.length - 1));
}

function lineAndColumn(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, col: offset - start + 1 };
}

/** Refuses a parsed value nested deeper than {@link MAX_DOCUMENT_DEPTH}, naming where. */
function checkDepth(op: string, value: unknown): unknown {
  const at = tooDeepAt(value);
  if (at !== undefined) {
    throw new KubeletError(
      'InvalidArgument',
      op,
      `${at}: nested more than ${MAX_DOCUMENT_DEPTH} levels deep; no pod field is`,
    );
  }
  return value;
}

/**
 * Parses one manifest. Exactly one non-empty document is allowed (a trailing `---` is fine);
 * several documents, a syntax error (named by line and column), a document nested deeper than
 * {@link MAX_DOCUMENT_DEPTH} or an empty text throw `KubeletError('InvalidArgument')`.
 */
export function parseManifest(text: string, origin: string): unknown {
  const op = `parse manifest ${origin}`;
  const trimmed = text.trim();
  if (trimmed === '') throw new KubeletError('InvalidArgument', op, 'manifest is empty');
  if (trimmed.startsWith('{')) {
    // As upstream's decoder sniffs it (utilyaml.ToJSON): a text that starts with `{` is JSON, and
    // a JSON error is reported as one. (Reading it as YAML instead was also slow: ~0.5 s per MiB
    // of broken JSON, inline for small texts.)
    try {
      return checkDepth(op, JSON.parse(trimmed) as unknown);
    } catch (err) {
      if (err instanceof KubeletError) throw err;
      const at = jsonErrorAt(trimmed);
      const lead = text.length - text.trimStart().length;
      const { line, col } = lineAndColumn(text, lead + at);
      const near = JSON.stringify(trimmed.slice(Math.max(0, at - 10), at + 10));
      throw new KubeletError(
        'InvalidArgument',
        op,
        `JSON: line ${line}, column ${col}: invalid JSON near ${near}`,
        {
          cause: err,
        },
      );
    }
  }
  const deep = yamlTooDeepAt(text);
  if (deep) {
    throw new KubeletError(
      'InvalidArgument',
      op,
      `YAML: line ${deep.line}, column ${deep.col}: nested more than ${MAX_YAML_TEXT_DEPTH} levels deep (indentation and open brackets); no pod field is`,
    );
  }
  const early = earlyYamlError(op, text);
  if (early) throw early;
  const lines = new LineCounter();
  let docs: ReturnType<typeof parseAllDocuments>;
  try {
    docs = parseYaml(text, lines);
  } catch (err) {
    if (isStackOverflow(err)) throw parserGaveUp(op, text, err);
    throw new KubeletError('InvalidArgument', op, `YAML: ${describeError(err)}`, { cause: err });
  }
  if (!Array.isArray(docs)) throw new KubeletError('InvalidArgument', op, 'unexpected YAML stream');
  const values: unknown[] = [];
  for (const doc of docs) {
    const first = doc.errors[0];
    if (first) throw isStackOverflow(first) ? parserGaveUp(op, text, first) : yamlError(op, first, lines);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (err) {
      // Aliases can make the value deeper than the text (each may repeat a deep node).
      const what = isStackOverflow(err)
        ? `nested more than ${MAX_DOCUMENT_DEPTH} levels deep`
        : describeError(err);
      throw new KubeletError('InvalidArgument', op, `YAML: ${what}`, { cause: err });
    }
    if (value !== null && value !== undefined) values.push(checkDepth(op, value));
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
