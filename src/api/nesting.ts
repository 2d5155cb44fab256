/**
 * A bound on how deeply a decoded document nests. The kubelet walks pods recursively in many
 * places (null stripping, hashing, deep equality, structured cloning); a document thousands of
 * levels deep would end one of those walks with a RangeError instead of a clear refusal.
 */

/**
 * The deepest nesting a pod document may have. No pod field is deeper than 9 levels (a node
 * affinity term's values); unknown fields are carried along, so some room is left for them.
 * Upstream's JSON decoder stops at 10,000 levels; this kubelet's recursive walks need less.
 */
export const MAX_DOCUMENT_DEPTH = 100;

/**
 * The path (`spec.x[0][0]…`, at most `shown` segments) of the first value nested deeper than
 * `max` levels below `root`, or undefined when there is none. Iterative: any depth is safe.
 */
export function tooDeepAt(root: unknown, max = MAX_DOCUMENT_DEPTH, shown = 12): string | undefined {
  interface Frame {
    value: unknown;
    depth: number;
    parent: Frame | undefined;
    key: string | number | undefined;
  }
  const stack: Frame[] = [{ value: root, depth: 0, parent: undefined, key: undefined }];
  for (let f = stack.pop(); f !== undefined; f = stack.pop()) {
    const v = f.value;
    if (typeof v !== 'object' || v === null) continue;
    if (f.depth >= max) return render(f, shown);
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ value: v[i] as unknown, depth: f.depth + 1, parent: f, key: i });
      }
    } else {
      for (const [k, x] of Object.entries(v)) stack.push({ value: x, depth: f.depth + 1, parent: f, key: k });
    }
  }
  return undefined;

  function render(f: Frame, limit: number): string {
    const keys: (string | number)[] = [];
    for (let at: Frame | undefined = f; at?.key !== undefined; at = at.parent) keys.push(at.key);
    keys.reverse();
    let out = '';
    for (const k of keys.slice(0, limit))
      out = typeof k === 'number' ? `${out}[${k}]` : out ? `${out}.${k}` : k;
    return keys.length > limit ? `${out}…` : out;
  }
}

/**
 * Deeper than this, a YAML text is refused before it is parsed: the YAML library recurses once per
 * level and, with the stack a kubelet has, gives up somewhere past 1,000 levels — where exactly
 * depends on how deep the caller's stack already is, so without this bound one text could be
 * refused with different messages on different reads.
 */
export const MAX_YAML_TEXT_DEPTH = 512;

/**
 * Where a YAML text first nests deeper than `max`, counted without parsing: a line's indentation
 * (block levels each take at least one column; `- ` sequence entries count their width) plus the
 * flow brackets (`[`, `{`) open at that point. Brackets inside quoted strings count too, so this
 * over-estimates; it only has to be a cheap, deterministic upper bound. Line and column are 1-based.
 */
export function yamlTooDeepAt(
  text: string,
  max = MAX_YAML_TEXT_DEPTH,
): { line: number; col: number } | undefined {
  let flow = 0;
  let line = 1;
  let lineStart = 0;
  let indent = 0;
  let atIndent = true;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 /* \n */) {
      line++;
      lineStart = i + 1;
      indent = 0;
      atIndent = true;
      continue;
    }
    if (atIndent) {
      if (c === 32 /* space */ || c === 45 /* - */) {
        indent++;
        if (indent + flow > max) return { line, col: i - lineStart + 1 };
        continue;
      }
      atIndent = false;
    }
    if (c === 91 /* [ */ || c === 123 /* { */) {
      flow++;
      if (indent + flow > max) return { line, col: i - lineStart + 1 };
    } else if ((c === 93 /* ] */ || c === 125) /* } */ && flow > 0) {
      flow--;
    }
  }
  return undefined;
}
