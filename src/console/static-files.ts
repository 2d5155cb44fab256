/**
 * The console page's files (src/console/static, copied beside the compiled code by
 * scripts/build.sh). Only the files named in FILES are served: a request names a key of that
 * table, never a path, so nothing outside the directory can be reached whatever the request holds.
 * Files are read on each request (four small files; nothing stays resident while nobody looks).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describeError } from '../util/errors.ts';

/** The page's only sources: its own origin; no inline script or style, no framing, no forms. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers on every console response (page, files, errors). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** File name → media type. `''` is the page itself. */
const FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '': { file: 'index.html', type: 'text/html; charset=utf-8' },
  'index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  'console.js': { file: 'console.js', type: 'text/javascript; charset=utf-8' },
  'console.css': { file: 'console.css', type: 'text/css; charset=utf-8' },
  'icon.svg': { file: 'icon.svg', type: 'image/svg+xml' },
};

export const STATIC_DIR = join(import.meta.dirname, 'static');

export type StaticResult =
  { status: 200; type: string; body: Buffer } | { status: 404; body: string } | { status: 500; body: string };

/** The file for `name` (the path segment after `/console/`). */
export async function readStatic(name: string, dir: string = STATIC_DIR): Promise<StaticResult> {
  const entry = Object.hasOwn(FILES, name) ? FILES[name] : undefined;
  if (!entry) return { status: 404, body: `console: no file ${JSON.stringify(name.slice(0, 100))}` };
  try {
    return { status: 200, type: entry.type, body: await readFile(join(dir, entry.file)) };
  } catch (err) {
    return { status: 500, body: `console: cannot read ${entry.file}: ${describeError(err)}` };
  }
}
