import { KubeletError } from '../../util/errors.ts';

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

/**
 * A volume mount's subPathExpr expanded from the container's environment (upstream
 * ExpandContainerVolumeMounts): every variable it names must have a non-empty value, else the
 * container cannot be configured.
 */
export function expandSubPathExpr(expr: string, env: ReadonlyMap<string, string>): string {
  const missing = new Set<string>();
  const expanded = expandVars(expr, (name) => {
    const value = env.get(name);
    if (value === undefined || value === '') missing.add(name);
    return value ?? '';
  });
  if (missing.size > 0) {
    throw new KubeletError(
      'InvalidArgument',
      'expand subPathExpr',
      `missing value for ${[...missing].sort().join(', ')}`,
    );
  }
  return expanded;
}
