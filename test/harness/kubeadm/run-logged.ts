/**
 * Runs a command to completion with its output appended to a log file as it comes (a hang can be
 * watched with `tail -f`) and also returned. No upstream counterpart.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { appendFile, mkdir } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import { dirname } from 'node:path';
import { KubeletError } from '../../../src/util/errors.ts';

export interface RunLoggedOptions {
  log: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Resolves with stdout+stderr on exit 0; rejects with the output's tail otherwise (or on timeout/abort). */
export async function runLogged(argv: readonly string[], opts: RunLoggedOptions): Promise<string> {
  const [cmd, ...args] = argv;
  if (cmd === undefined) throw new KubeletError('InvalidArgument', 'run', 'empty command line');
  const op = argv.join(' ');
  await mkdir(dirname(opts.log), { recursive: true });
  await appendFile(opts.log, `\n===== ${new Date().toISOString()} ${op}\n`);
  const log = createWriteStream(opts.log, { flags: 'a' });
  const chunks: Buffer[] = [];
  try {
    const timeout = AbortSignal.timeout(opts.timeoutMs);
    const stop = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const exit = await new Promise<{ code: number | null; sig: NodeJS.Signals | null }>((resolve, reject) => {
      const child = spawn(cmd, args, {
        stdio: ['ignore', 'pipe', 'pipe'],
        signal: stop,
        killSignal: 'SIGKILL',
        ...(opts.env !== undefined ? { env: opts.env } : {}),
      });
      const onData = (c: Buffer): void => {
        chunks.push(c);
        log.write(c);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('error', (err) => {
        if (stop.aborted) return; // the 'exit' that follows the kill settles it
        reject(new KubeletError('Internal', op, `cannot run: ${err.message}`, { cause: err }));
      });
      child.once('close', (code, sig) => resolve({ code, sig }));
    });
    const out = Buffer.concat(chunks).toString('utf8');
    if (exit.code === 0) return out;
    const tail = out.trimEnd().split('\n').slice(-25).join('\n');
    const why = timeoutReason(opts, exit) ?? `exit ${exit.code ?? exit.sig ?? '?'}`;
    throw new KubeletError(
      opts.signal?.aborted ? 'Canceled' : 'Internal',
      op,
      `${why}; log ${opts.log}\n${tail}`,
    );
  } finally {
    log.end();
    await finished(log);
  }
}

function timeoutReason(
  opts: RunLoggedOptions,
  exit: { code: number | null; sig: NodeJS.Signals | null },
): string | undefined {
  if (exit.sig === 'SIGKILL' && !opts.signal?.aborted) return `killed after ${opts.timeoutMs} ms`;
  return undefined;
}
