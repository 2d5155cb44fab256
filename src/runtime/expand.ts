/**
 * Kubernetes `$(VAR)` expansion (upstream third_party/forked/golang/expansion): `$(NAME)` is replaced
 * by the variable's value when defined and left verbatim otherwise; `$$` escapes to a literal `$`;
 * any other `$` is kept as is.
 */
export function expandVars(input: string, lookup: (name: string) => string | undefined): string {
  let out = '';
  for (let i = 0; i < input.length; i++) {
    const ch = input[i];
    if (ch !== '$' || i + 1 >= input.length) {
      out += ch;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i++;
      continue;
    }
    if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close === -1) {
        // Unterminated: keep "$(" as is and go on scanning after it (later "$$" escapes still apply).
        out += '$(';
        i++;
        continue;
      }
      const name = input.slice(i + 2, close);
      const value = lookup(name);
      out += value ?? `$(${name})`;
      i = close;
      continue;
    }
    out += ch;
  }
  return out;
}
