/**
 * Termination messages (upstream kuberuntime makeMounts / getTerminationMessage /
 * readLastStringFromContainerLogs): every container start gets a fresh, empty, world-writable file
 * under `<rootDir>/pods/<uid>/containers/<name>/`, bind-mounted read-write at the container's
 * terminationMessagePath; once the container has exited its content (the last 4096 bytes) becomes
 * the message of its terminated state — or, with FallbackToLogsOnError, an empty file and a non-zero
 * exit, the tail of its CRI log (last 80 lines, at most the last 2048 bytes).
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KUBELET_DIR_MODE } from '../util/private-dir.ts';
import type { Mount } from './cri/types.ts';
import { describeError } from '../util/errors.ts';
import {
  MAX_TERMINATION_MESSAGE_BYTES,
  MAX_TERMINATION_MESSAGE_LOG_BYTES,
  MAX_TERMINATION_MESSAGE_LOG_LINES,
} from '../config/defaults.ts';

/** Upstream getPodContainerDir: `<rootDir>/pods/<uid>/containers/<containerName>`. */
export function podContainerDir(rootDir: string, podUID: string, containerName: string): string {
  return join(rootDir, 'pods', podUID, 'containers', containerName);
}

/**
 * Creates the termination-message file for one container start (a random 8-hex-digit name, so each
 * run gets its own), empty and mode 0666 whatever the umask, and returns the mount for it.
 */
export async function createTerminationMessageMount(
  containerDir: string,
  containerPath: string,
): Promise<Mount> {
  await mkdir(containerDir, { recursive: true, mode: KUBELET_DIR_MODE });
  const hostPath = join(containerDir, randomBytes(4).toString('hex'));
  await writeFile(hostPath, '', { flag: 'wx' });
  await chmod(hostPath, 0o666);
  return { hostPath, containerPath, readonly: false };
}

/** Upstream tail.ReadAtMost: the last `max` bytes of a file (all of it if shorter). */
export async function readAtMost(path: string, max: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    const n = Math.min(size, max);
    const buf = Buffer.alloc(n);
    let off = 0;
    while (off < n) {
      const { bytesRead } = await fh.read(buf, off, n - off, size - n + off);
      if (bytesRead === 0) break;
      off += bytesRead;
    }
    return buf.subarray(0, off);
  } finally {
    await fh.close();
  }
}

const READ_BLOCK = 64 * 1024;

/**
 * Upstream tail.FindTailLineStartIndex + read: the bytes after the (lines+1)-th newline from the end,
 * i.e. the last `lines` lines; a last line without its newline comes along but is not counted.
 */
export async function readLastLines(path: string, lines: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    const chunks: Buffer[] = [];
    let newlines = 0;
    for (let pos = size; pos > 0;) {
      const len = Math.min(READ_BLOCK, pos);
      pos -= len;
      const buf = Buffer.alloc(len);
      const { bytesRead } = await fh.read(buf, 0, len, pos);
      const block = buf.subarray(0, bytesRead);
      for (let i = block.length - 1; i >= 0; i--) {
        if (block[i] === 0x0a && ++newlines > lines) {
          chunks.unshift(block.subarray(i + 1));
          return Buffer.concat(chunks);
        }
      }
      chunks.unshift(block);
    }
    return Buffer.concat(chunks);
  } finally {
    await fh.close();
  }
}

/**
 * Upstream parseCRILog + the log writer: the container's output from CRI log text
 * (`<RFC3339Nano> <stdout|stderr> <P|F>[:more tags] <content>`). A full line (F) keeps its newline, a
 * partial one (P) continues on the next line. Lines that do not parse are skipped, as upstream.
 */
export function criLogContent(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let start = 0;
  while (start < data.length) {
    let end = data.indexOf(0x0a, start);
    end = end < 0 ? data.length : end + 1;
    const line = data.subarray(start, end);
    start = end;
    const s1 = line.indexOf(0x20);
    if (s1 < 0 || Number.isNaN(Date.parse(line.subarray(0, s1).toString('latin1')))) continue;
    const s2 = line.indexOf(0x20, s1 + 1);
    if (s2 < 0) continue;
    const stream = line.subarray(s1 + 1, s2).toString('latin1');
    if (stream !== 'stdout' && stream !== 'stderr') continue;
    const s3 = line.indexOf(0x20, s2 + 1);
    if (s3 < 0) continue;
    const partial =
      line
        .subarray(s2 + 1, s3)
        .toString('latin1')
        .split(':')[0] === 'P';
    let content = line.subarray(s3 + 1);
    if (partial && content.length > 0 && content[content.length - 1] === 0x0a) {
      content = content.subarray(0, content.length - 1);
    }
    out.push(content);
  }
  return Buffer.concat(out);
}

/** Upstream readLastStringFromContainerLogs: the last 80 lines of the CRI log, at most 2048 bytes. */
export async function containerLogTail(
  logPath: string,
  lines = MAX_TERMINATION_MESSAGE_LOG_LINES,
  maxBytes = MAX_TERMINATION_MESSAGE_LOG_BYTES,
): Promise<string> {
  try {
    const content = criLogContent(await readLastLines(logPath, lines));
    return content.subarray(Math.max(0, content.length - maxBytes)).toString('utf8');
  } catch (err) {
    return `Error on reading termination message from logs: ${describeError(err)}`;
  }
}

/** What the runtime reports about an exited container, as far as its message is concerned. */
export interface ExitedContainerInfo {
  exitCode: number;
  /** The runtime's reason (containerd: `Completed`, `Error`, `OOMKilled`, `StartError`, …). */
  reason: string;
  /** The runtime's own message, if any. */
  message: string;
  mounts: Mount[];
  /** The CRI log file (ContainerStatus.log_path). */
  logPath: string;
  /** From the container's annotations. '' = no termination message file. */
  terminationMessagePath: string;
  terminationMessagePolicy: string;
}

export interface TerminationMessage {
  /** The message for the terminated state: the runtime's message, then `: ` and the container's. */
  message: string;
  /** The container's part came from its log (FallbackToLogsOnError). */
  fromLogs: boolean;
}

/** Upstream convertToKubeContainerStatus, the message part, for an exited container. */
export async function exitedContainerMessage(info: ExitedContainerInfo): Promise<TerminationMessage> {
  // A container that could not even start has no logs worth reading (docker: ContainerCannotRun,
  // containerd: StartError).
  const fallbackToLogs =
    info.terminationMessagePolicy === 'FallbackToLogsOnError' &&
    info.exitCode !== 0 &&
    info.reason !== 'ContainerCannotRun' &&
    info.reason !== 'StartError';
  let own = '';
  let checkLogs = fallbackToLogs;
  const mount =
    info.terminationMessagePath === ''
      ? undefined
      : info.mounts.find((m) => m.containerPath === info.terminationMessagePath);
  if (mount) {
    try {
      own = (await readAtMost(mount.hostPath, MAX_TERMINATION_MESSAGE_BYTES)).toString('utf8');
      checkLogs = fallbackToLogs && own.length === 0;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        own = `Error on reading termination log ${mount.hostPath}: ${describeError(err)}`;
        checkLogs = false;
      }
    }
  }
  if (checkLogs) own = info.logPath === '' ? '' : await containerLogTail(info.logPath);
  let message = info.message;
  if (own.length > 0) message = message.length > 0 ? `${message}: ${own}` : own;
  return { message, fromLogs: checkLogs };
}
