import type { Container, Probe } from '../api/types.ts';
import { DEFAULT_PROBE_TIMEOUT_SECONDS } from '../config/defaults.ts';
import { expandVars } from '../runtime/index.ts';
import { KubeletError } from '../util/errors.ts';
import { execProbe, type ExecFn } from './exec-probe.ts';
import { grpcProbe } from './grpc-probe.ts';
import { httpProbe } from './http-probe.ts';
import type { ProbeOutcome } from './outcome.ts';
import { resolveContainerPort } from './port.ts';
import { tcpProbe } from './tcp-probe.ts';

export interface ProbeTarget {
  container: Container;
  containerId: string;
  /** The pod's IP: the default host of httpGet and tcpSocket, the only host of grpc. */
  podIP: string | undefined;
  exec: ExecFn;
}

function timeoutSecondsOf(probe: Probe): number {
  return probe.timeoutSeconds && probe.timeoutSeconds > 0
    ? probe.timeoutSeconds
    : DEFAULT_PROBE_TIMEOUT_SECONDS;
}

function hostOr(host: string | undefined, podIP: string | undefined): string {
  if (host) return host;
  if (podIP) return podIP;
  throw new KubeletError('FailedPrecondition', 'probe', 'the pod has no IP address yet');
}

/**
 * Runs the probe's one handler once (upstream prober.runProbe). Returns what it concluded; throws
 * when it could not conclude (bad port, no pod IP, runtime error, no handler, aborted).
 */
export async function runProbe(
  probe: Probe,
  target: ProbeTarget,
  signal?: AbortSignal,
): Promise<ProbeOutcome> {
  const timeoutSeconds = timeoutSecondsOf(probe);
  const timeoutMs = timeoutSeconds * 1000;
  const { container } = target;
  if (probe.exec) {
    // Upstream expands $(VAR) in the command with the container's literal env values only.
    const env = new Map<string, string>();
    for (const e of container.env ?? []) if (!e.valueFrom) env.set(e.name, e.value ?? '');
    const cmd = (probe.exec.command ?? []).map((a) => expandVars(a, (n) => env.get(n)));
    return execProbe(target.exec, target.containerId, cmd, timeoutSeconds, signal);
  }
  if (probe.httpGet) {
    const g = probe.httpGet;
    const port = resolveContainerPort(g.port, container);
    const host = hostOr(g.host, target.podIP);
    return httpProbe(
      {
        host,
        port,
        timeoutMs,
        ...(g.scheme ? { scheme: g.scheme } : {}),
        ...(g.path !== undefined ? { path: g.path } : {}),
        ...(g.httpHeaders ? { httpHeaders: g.httpHeaders } : {}),
      },
      signal,
    );
  }
  if (probe.tcpSocket) {
    const port = resolveContainerPort(probe.tcpSocket.port, container);
    return tcpProbe(hostOr(probe.tcpSocket.host, target.podIP), port, timeoutMs, signal);
  }
  if (probe.grpc) {
    const port = resolveContainerPort(probe.grpc.port, container);
    return grpcProbe(hostOr(undefined, target.podIP), port, probe.grpc.service ?? '', timeoutMs, signal);
  }
  throw new KubeletError('InvalidArgument', 'probe', `missing probe handler for container ${container.name}`);
}
