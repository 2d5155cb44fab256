/**
 * Bounded child processes (the systemd tools: busctl, systemd-inhibit): a command run to
 * completion under a deadline with capped output, and a long-running process whose stdout is read
 * line by line, which is stopped (stdin closed, SIGTERM, then SIGKILL) on request and never keeps
 * the kubelet's process alive by itself.
 */
import { spawn } from 'node:child_process';
import { Socket } from 'node:net';
import { abortReason } from './abort.ts';
import { KubeletError } from './errors.ts';

/** Output kept per stream of a command, and the longest stdout line of a long-running process. */
const MAX_OUTPUT_CHARS = 64 * 1024;
const MAX_STDERR_TAIL_CHARS = 4096;
/** Between SIGTERM and SIGKILL when a process is stopped. */
const DEFAULT_STOP_GRACE_MS = 2_000;

export interface CommandResult {
  /** Exit code; null when it was killed by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** It was killed at its deadline. */
  timedOut: boolean;
}

export interface RunOptions {
  timeoutMs: number;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

/**
 * Runs `file args` to completion. SIGKILLed at `timeoutMs` (then `timedOut`) or when `signal`
 * aborts (then it rejects with the signal's reason); each stream keeps its first 64 KiB. Rejects
 * with an `Unavailable` KubeletError when the program cannot be started (e.g. not installed).
 */
export function runCommand(file: string, args: readonly string[], opts: RunOptions): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) {
      reject(abortReason(opts.signal));
      return;
    }
    const child = spawn(file, args, { env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let aborted = false;
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      if (stdout.length < MAX_OUTPUT_CHARS) stdout += s.slice(0, MAX_OUTPUT_CHARS - stdout.length);
    });
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      if (stderr.length < MAX_OUTPUT_CHARS) stderr += s.slice(0, MAX_OUTPUT_CHARS - stderr.length);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    const onAbort = () => {
      aborted = true;
      child.kill('SIGKILL');
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    child.on('error', (err) => {
      done();
      reject(new KubeletError('Unavailable', `run ${file}`, err.message, { cause: err }));
    });
    child.on('close', (code, signal) => {
      done();
      if (aborted) reject(abortReason(opts.signal));
      else resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the program could not be started. */
  error?: Error;
}

export interface LineProcess {
  /** Settles (never rejects) once the process is gone. */
  readonly exited: Promise<ProcessExit>;
  /** The last 4 KiB of its stderr, trimmed, for error messages. */
  stderrTail(): string;
  /** Closes its stdin, sends SIGTERM, SIGKILL after `graceMs`; resolves once it exited. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

export interface LineProcessOptions {
  env?: NodeJS.ProcessEnv;
  /** Each stdout line without its newline; a line longer than 64 KiB is cut there. Must not throw. */
  onLine: (line: string) => void;
  /** Keep a pipe to its stdin open until `stop()` (its end tells the process to finish). */
  stdinPipe?: boolean;
  /** Called with the stderr tail (the last 4 KiB) whenever stderr grows. Must not throw. */
  onStderr?: (tail: string) => void;
}

/** Starts a long-running process whose stdout is handed over line by line. */
export function startLineProcess(
  file: string,
  args: readonly string[],
  opts: LineProcessOptions,
): LineProcess {
  const child = spawn(file, args, {
    env: opts.env ?? process.env,
    stdio: [opts.stdinPipe ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  let partial = '';
  let skipping = false;
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      if (skipping) skipping = false;
      else opts.onLine(line);
    }
    if (partial.length > MAX_OUTPUT_CHARS) {
      if (!skipping) opts.onLine(partial.slice(0, MAX_OUTPUT_CHARS));
      skipping = true;
      partial = '';
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    stderr = (stderr + s).slice(-MAX_STDERR_TAIL_CHARS);
    opts.onStderr?.(stderr);
  });
  // A pipe closed by the process (EPIPE) is how it ends, not an error of ours.
  child.stdin?.on('error', () => undefined);
  // Never what keeps the kubelet running: when it exits, the process sees its stdin close (or its
  // next write fail) and ends too.
  child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr]) unrefStream(stream);
  const exited = new Promise<ProcessExit>((resolve) => {
    child.on('error', (error) => resolve({ code: null, signal: null, error }));
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  let stopping: Promise<void> | undefined;
  return {
    exited,
    stderrTail: () => stderr.trim(),
    stop(graceMs = DEFAULT_STOP_GRACE_MS) {
      stopping ??= (async () => {
        child.stdin?.end();
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}

function unrefStream(stream: unknown): void {
  // The stdio pipes are net.Socket instances, which can be unref'ed; the stream types do not say so.
  if (stream instanceof Socket) stream.unref();
}

/** One line about how a process ended, with its stderr, for error messages. */
export function describeExit(name: string, exit: ProcessExit, stderr: string): string {
  if (exit.error) return `${name} could not be started: ${exit.error.message}`;
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
  return stderr ? `${name} ${how}: ${stderr}` : `${name} ${how}`;
}
