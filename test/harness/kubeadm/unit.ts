/**
 * The kubelet's systemd service as a kubeadm node has it, read the way systemd reads it, for a
 * machine without systemd: kubeadm's drop-in (10-kubeadm.conf, which the kubeadm package installs
 * beside kubelet.service: kubernetes/kubernetes build/debs/10-kubeadm.conf up to 1.17, then
 * kubernetes/release), its EnvironmentFile= lines (kubeadm writes /var/lib/kubelet/kubeadm-flags.env
 * with KUBELET_KUBEADM_ARGS, cmd/kubeadm/app/phases/kubelet/flags.go), and ExecStart= with systemd's
 * variable expansion (systemd.service(5) "Command lines": `$VAR` splits at whitespace, `${VAR}` is one
 * word). Pure: the caller reads the files. Only what the kubeadm drop-in uses is supported.
 */

import { KubeletError } from '../../../src/util/errors.ts';

/** kubeadm's kubelet drop-in, directive for directive (the comments are ours). */
export const KUBEADM_DROP_IN = `# The kubelet as kubeadm runs it (the kubeadm package's 10-kubeadm.conf).
[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# Written by "kubeadm init" and "kubeadm join": KUBELET_KUBEADM_ARGS, the node's own flags.
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# The operator's last-resort overrides: KUBELET_EXTRA_ARGS.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
`;

export interface ServiceUnit {
  /** Environment= assignments, in order. */
  environment: [string, string][];
  /** EnvironmentFile= paths; `optional` for the `-` prefix (a missing file is not an error). */
  environmentFiles: { path: string; optional: boolean }[];
  /** The last ExecStart= after the last empty one (an empty ExecStart= clears the list). */
  execStart: string | undefined;
}

function unitError(message: string): KubeletError {
  return new KubeletError('InvalidArgument', 'read the kubelet service unit', message);
}

/** Splits a value into words as systemd does for Environment= and ExecStart= (double and single quotes). */
export function splitQuoted(value: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < value.length; i++) {
    const c = value[i] ?? '';
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < value.length) cur += unescape(value[++i] ?? '');
      else cur += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
    } else if (c === '\\' && i + 1 < value.length) {
      cur += unescape(value[++i] ?? '');
      inWord = true;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (quote !== undefined) throw unitError(`unbalanced ${quote} in ${JSON.stringify(value)}`);
  if (inWord) words.push(cur);
  return words;
}

function unescape(c: string): string {
  switch (c) {
    case 'n':
      return '\n';
    case 't':
      return '\t';
    default:
      return c;
  }
}

/** The [Service] directives of a unit file or drop-in that a kubelet's command line depends on. */
export function parseServiceUnit(text: string): ServiceUnit {
  const unit: ServiceUnit = { environment: [], environmentFiles: [], execStart: undefined };
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) {
      section = line;
      continue;
    }
    if (section !== '[Service]') continue;
    const eq = line.indexOf('=');
    if (eq < 0) throw unitError(`not a directive: ${JSON.stringify(line)}`);
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    switch (key) {
      case 'Environment':
        for (const word of splitQuoted(value)) {
          const i = word.indexOf('=');
          if (i <= 0) throw unitError(`Environment= wants NAME=VALUE, got ${JSON.stringify(word)}`);
          unit.environment.push([word.slice(0, i), word.slice(i + 1)]);
        }
        break;
      case 'EnvironmentFile':
        unit.environmentFiles.push(
          value.startsWith('-') ? { path: value.slice(1), optional: true } : { path: value, optional: false },
        );
        break;
      case 'ExecStart':
        unit.execStart = value === '' ? undefined : value;
        break;
      default:
        // Other directives (Restart=, User=, ...) do not change the command line.
        break;
    }
  }
  return unit;
}

/**
 * The assignments of an environment file (systemd.exec(5) EnvironmentFile=): `NAME=VALUE` lines, `#`
 * and `;` comments, a value in double quotes with backslash escapes (what Go's %q writes: kubeadm's
 * kubeadm-flags.env) or in single quotes verbatim.
 */
export function parseEnvironmentFile(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw unitError(`environment file line is not NAME=VALUE: ${JSON.stringify(line)}`);
    const name = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    const quoted = /^(["']).*\1$/s.test(value);
    // A quoted value is exactly one word; an unquoted one is kept as written.
    out.push([name, quoted ? (splitQuoted(value)[0] ?? '') : value]);
  }
  return out;
}

/**
 * ExecStart= expanded with `env`: a word that is exactly `$NAME` becomes the value's whitespace-split
 * words (none when unset or empty), `${NAME}` inside a word is replaced by the value as is.
 */
export function expandExecStart(execStart: string, env: ReadonlyMap<string, string>): string[] {
  const argv: string[] = [];
  for (const word of splitRawWords(execStart)) {
    const whole = /^\$([A-Za-z_][A-Za-z0-9_]*)$/.exec(word);
    if (whole) {
      const value = env.get(whole[1] ?? '') ?? '';
      argv.push(...value.split(/\s+/).filter((w) => w !== ''));
      continue;
    }
    // Unquote first, then substitute: a ${NAME} value is never split again.
    for (const w of splitQuoted(word)) {
      argv.push(w.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => env.get(name) ?? ''));
    }
  }
  return argv;
}

/** Words separated by whitespace outside quotes, quotes kept (expansion comes before unquoting). */
function splitRawWords(s: string): string[] {
  const words: string[] = [];
  let cur = '';
  let quote: string | undefined;
  for (const c of s) {
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
      cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      cur += c;
    } else if (/\s/.test(c)) {
      if (cur !== '') words.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  if (cur !== '') words.push(cur);
  return words;
}

/**
 * The environment and command line systemd would start the service with: Environment= first, then
 * each environment file in order (later assignments win), then ExecStart= expanded with the result.
 * `readFile(path)` returns undefined for a missing file.
 */
export async function serviceCommand(
  unitText: string,
  readFile: (path: string) => Promise<string | undefined>,
): Promise<{ argv: string[]; env: Map<string, string> }> {
  const unit = parseServiceUnit(unitText);
  const env = new Map<string, string>(unit.environment);
  for (const f of unit.environmentFiles) {
    const text = await readFile(f.path);
    if (text === undefined) {
      if (f.optional) continue;
      throw unitError(`EnvironmentFile=${f.path} does not exist`);
    }
    for (const [k, v] of parseEnvironmentFile(text)) env.set(k, v);
  }
  if (unit.execStart === undefined) throw unitError('no ExecStart=');
  const argv = expandExecStart(unit.execStart, env);
  if (argv.length === 0) throw unitError('ExecStart= expands to nothing');
  return { argv, env };
}
