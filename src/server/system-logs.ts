/**
 * `/logs/` (upstream enableSystemLogHandler): the node's log files under one directory (/var/log),
 * a listing for directories, the file for files. Names are resolved with symlinks followed and must
 * stay inside the directory (upstream's http.Dir would follow a link out of it; we refuse).
 */
import { createReadStream } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { describeError } from '../util/errors.ts';
import { POD_OUTPUT_HEADERS, sendText, writeHead } from './http-util.ts';

function escapeHTML(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export async function serveSystemLogs(
  req: IncomingMessage,
  res: ServerResponse,
  dir: string,
  subpath: string,
): Promise<void> {
  let root: string;
  let target: string;
  try {
    root = await realpath(dir);
    target = await realpath(join(root, subpath));
  } catch {
    // Missing file or directory (or the root itself): upstream answers 404 too.
    sendText(res, 404, '404 page not found');
    return;
  }
  if (target !== root && !target.startsWith(root + sep)) {
    sendText(res, 404, '404 page not found');
    return;
  }
  try {
    const st = await stat(target);
    if (st.isDirectory()) {
      const entries = await readdir(target, { withFileTypes: true });
      const names = entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort();
      const body = `<pre>\n${names.map((n) => `<a href="${escapeHTML(encodeURI(n))}">${escapeHTML(n)}</a>`).join('\n')}\n</pre>\n`;
      writeHead(res, 200, { ...POD_OUTPUT_HEADERS, 'content-type': 'text/html; charset=utf-8' });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    if (!st.isFile()) {
      sendText(res, 404, '404 page not found');
      return;
    }
    writeHead(res, 200, {
      ...POD_OUTPUT_HEADERS,
      'content-type': 'text/plain; charset=utf-8',
      'content-length': st.size,
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    await pipeline(createReadStream(target), res);
  } catch (err) {
    if (!res.headersSent) sendText(res, 500, describeError(err));
    else res.destroy();
  }
}
