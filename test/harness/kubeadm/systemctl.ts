/**
 * A `systemctl` for a kubeadm node on a machine without systemd, first on kubeadm's PATH. kubeadm 1.20
 * takes any `systemctl` on PATH for systemd (cmd/kubeadm/app/util/initsystem/initsystem_unix.go) and,
 * in the kubelet-start phase, runs `systemctl stop kubelet` before writing the kubelet's files and
 * `systemctl daemon-reload` + `systemctl restart kubelet` after (phases/kubelet/kubelet.go); its
 * preflight asks `status`/`is-enabled` (ServiceCheck) and its kubelet defaults `is-active
 * systemd-resolved`. This stand-in answers the queries from the kubelet's pid file and hands
 * start/stop/restart to the harness (a request file, answered with a `.done` file holding the exit
 * code), which starts the kubelet from the unit's files as systemd would. No upstream counterpart.
 */
import { mkdir, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../../src/util/logger.ts';
import { describeError } from '../../../src/util/errors.ts';
import { sleep } from '../../../src/util/abort.ts';

export type ServiceVerb = 'start' | 'stop' | 'restart';

/** How long the stand-in waits for the harness to answer a start/stop/restart. */
const ANSWER_TIMEOUT_S = 120;

/** The stand-in's text; `runDir` holds kubelet.pid, requests/ and systemctl.log. */
export function systemctlScript(runDir: string, dropIn: string): string {
  return `#!/bin/sh
# systemctl stand-in for a kubeadm node without systemd: test/harness/kubeadm/systemctl.ts.
run=${shellQuote(runDir)}
echo "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ) systemctl $*" >>"$run/systemctl.log"
active() {
  pid=$(cat "$run/kubelet.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}
verb="\${1:-}"
unit="\${2:-}"
unit="\${unit%.service}"
case "$verb" in
daemon-reload) exit 0 ;;
start | stop | restart)
  if [ "$unit" != kubelet ]; then
    echo "Failed to $verb $unit.service: Unit $unit.service not found." >&2
    exit 5
  fi
  seq="$(date +%s%N)-$$"
  echo "$verb" >"$run/requests/$seq.tmp"
  mv "$run/requests/$seq.tmp" "$run/requests/$seq.req"
  i=0
  while [ ! -f "$run/requests/$seq.done" ]; do
    i=$((i + 1))
    if [ "$i" -gt ${ANSWER_TIMEOUT_S * 10} ]; then
      echo "systemctl: the harness did not answer $verb $unit within ${ANSWER_TIMEOUT_S}s" >&2
      exit 1
    fi
    sleep 0.1
  done
  rc=$(cat "$run/requests/$seq.done")
  rm -f "$run/requests/$seq.done"
  exit "$rc"
  ;;
is-enabled)
  if [ "$unit" = kubelet ]; then echo enabled; exit 0; fi
  echo disabled
  exit 1
  ;;
is-active)
  if [ "$unit" = kubelet ] && active; then echo active; exit 0; fi
  echo inactive
  exit 3
  ;;
status)
  if [ "$unit" != kubelet ]; then
    echo "   Loaded: not-found (Reason: Unit $unit.service not found.)"
    exit 4
  fi
  echo "* kubelet.service - kubelet (tskubelet bed, no systemd)"
  echo "   Loaded: loaded (${dropIn})"
  if active; then echo "   Active: active (running) since pid $pid"; exit 0; fi
  echo "   Active: inactive (dead)"
  exit 3
  ;;
*)
  echo "systemctl (tskubelet bed stand-in): $verb is not supported" >&2
  exit 1
  ;;
esac
`;
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export async function writeSystemctl(binDir: string, runDir: string, dropIn: string): Promise<string> {
  await mkdir(binDir, { recursive: true });
  await mkdir(join(runDir, 'requests'), { recursive: true });
  const path = join(binDir, 'systemctl');
  await writeFile(path, systemctlScript(runDir, dropIn), { mode: 0o755 });
  return path;
}

export interface SystemctlAnswerer {
  /** Stops answering (requests still pending time out in the stand-in). */
  stop(): Promise<void>;
  /** Every request answered so far, in order, with its exit code. */
  readonly handled: readonly { verb: ServiceVerb; rc: number }[];
}

/**
 * Polls `<runDir>/requests` and runs `act` for each request in the order they were made; writes the
 * exit code the stand-in returns (0, or 1 when `act` threw: logged).
 */
export function answerSystemctl(
  runDir: string,
  act: (verb: ServiceVerb) => Promise<void>,
  logger: Logger,
): SystemctlAnswerer {
  const dir = join(runDir, 'requests');
  const handled: { verb: ServiceVerb; rc: number }[] = [];
  let stopped = false;
  const answer = async (req: string): Promise<void> => {
    const verb = (await readFile(req, 'utf8')).trim();
    let rc = 0;
    if (verb === 'start' || verb === 'stop' || verb === 'restart') {
      try {
        await act(verb);
      } catch (err) {
        rc = 1;
        logger.error(`systemctl ${verb} kubelet failed`, { err: describeError(err) });
      }
      handled.push({ verb, rc });
    } else {
      rc = 1;
      logger.error('unknown systemctl request', { verb, req });
    }
    const done = req.replace(/\.req$/, '.done');
    await writeFile(`${done}.tmp`, `${rc}\n`);
    await rename(`${done}.tmp`, done);
    await unlink(req);
  };
  const loop = (async () => {
    while (!stopped) {
      let names: string[];
      try {
        names = (await readdir(dir)).filter((n) => n.endsWith('.req')).sort();
      } catch (err) {
        logger.warn('cannot read the systemctl requests', { dir, err: describeError(err) });
        names = [];
      }
      for (const name of names) {
        try {
          await answer(join(dir, name));
        } catch (err) {
          // The stand-in then times out and kubeadm reports it; the loop goes on for the next ones.
          logger.error('cannot answer a systemctl request', { req: name, err: describeError(err) });
          await unlink(join(dir, name)).catch((unlinkErr: unknown) =>
            logger.warn('cannot drop the unanswered request', { req: name, err: describeError(unlinkErr) }),
          );
        }
      }
      await sleep(100);
    }
  })();
  return {
    handled,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
