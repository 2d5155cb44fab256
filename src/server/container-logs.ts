/**
 * `GET /containerLogs/{namespace}/{pod}/{container}`: which container instance a log request means
 * (upstream validateContainerLogStatus, with its messages), then the CRI log file streamed by
 * `src/logs`. Errors before the first byte are plain-text with upstream's status codes; once the
 * stream started, a failure ends it.
 */
import type { ServerResponse } from 'node:http';
import type { Pod, PodStatus } from '../api/types.ts';
import { parseLogOptions, readContainerLogs } from '../logs/index.ts';
import { describeError, isNotFound } from '../util/errors.ts';
import type { Logger } from '../util/logger.ts';
import { POD_OUTPUT_HEADERS, sendText, writeHead } from './http-util.ts';
import type { KubeletApiHost } from './host.ts';

export type LogTarget = { ok: true; containerID: string } | { ok: false; message: string };

/** The runtime container ID (without the `containerd://` scheme) whose log the request means. */
export function containerForLogs(
  podName: string,
  status: PodStatus | undefined,
  containerName: string,
  previous: boolean,
): LogTarget {
  const cs =
    status?.containerStatuses?.find((c) => c.name === containerName) ??
    status?.initContainerStatuses?.find((c) => c.name === containerName);
  const fail = (message: string): LogTarget => ({ ok: false, message });
  if (!cs) return fail(`container "${containerName}" in pod "${podName}" is not available`);
  const last = cs.lastState.terminated;
  const { waiting, running, terminated } = cs.state;
  let id: string | undefined;
  if (previous) {
    if (!last?.containerID)
      return fail(`previous terminated container "${containerName}" in pod "${podName}" not found`);
    id = last.containerID;
  } else if (running) {
    id = cs.containerID;
  } else if (terminated) {
    id = terminated.containerID || last?.containerID;
    if (!id) return fail(`container "${containerName}" in pod "${podName}" is terminated`);
  } else if (last) {
    if (!last.containerID) return fail(`container "${containerName}" in pod "${podName}" is terminated`);
    id = last.containerID;
  } else if (waiting) {
    const reason = waiting.reason ?? '';
    if (reason === 'ErrImagePull') {
      return fail(
        `container "${containerName}" in pod "${podName}" is waiting to start: image can't be pulled`,
      );
    }
    if (reason === 'ImagePullBackOff') {
      return fail(
        `container "${containerName}" in pod "${podName}" is waiting to start: trying and failing to pull image`,
      );
    }
    return fail(`container "${containerName}" in pod "${podName}" is waiting to start: ${reason}`);
  } else {
    return fail(`container "${containerName}" in pod "${podName}" is waiting to start - no logs yet`);
  }
  if (!id) return fail(`container "${containerName}" in pod "${podName}" is waiting to start - no logs yet`);
  return { ok: true, containerID: id.replace(/^[a-z0-9]+:\/\//, '') };
}

function hasContainer(pod: Pod, name: string): boolean {
  return (
    pod.spec.containers.some((c) => c.name === name) ||
    (pod.spec.initContainers ?? []).some((c) => c.name === name)
  );
}

export async function serveContainerLogs(
  res: ServerResponse,
  route: { namespace: string; pod: string; container: string },
  query: URLSearchParams,
  host: KubeletApiHost,
  logger: Logger,
): Promise<void> {
  const parsed = parseLogOptions(query);
  if (!parsed.ok) {
    sendText(res, parsed.status, parsed.message);
    return;
  }
  const options = parsed.options;
  const pod = host.getPod(route.namespace, route.pod);
  if (!pod) {
    sendText(res, 404, `pod "${route.pod}" does not exist`);
    return;
  }
  if (!hasContainer(pod.pod, route.container)) {
    sendText(res, 404, `container "${route.container}" not found in pod "${route.pod}"`);
    return;
  }
  const target = containerForLogs(route.pod, pod.status, route.container, options.previous);
  if (!target.ok) {
    sendText(res, 400, target.message);
    return;
  }
  const ac = new AbortController();
  const onClose = () => ac.abort(new Error('client went away'));
  res.once('close', onClose);
  try {
    let path: string;
    try {
      path = await host.containerLogPath(target.containerID, ac.signal);
    } catch (err) {
      const message = isNotFound(err)
        ? `container "${route.container}" in pod "${route.pod}" (${target.containerID}) is gone from the runtime`
        : `failed to get the log file of container "${route.container}" in pod "${route.pod}": ${describeError(err)}`;
      sendText(res, 400, message);
      return;
    }
    writeHead(res, 200, {
      ...POD_OUTPUT_HEADERS,
      'content-type': 'text/plain; charset=utf-8',
      'transfer-encoding': 'chunked',
    });
    res.flushHeaders();
    await readContainerLogs({
      path,
      options,
      stdout: res,
      stderr: res,
      signal: ac.signal,
      isRunning: () => host.isContainerRunning(target.containerID, ac.signal),
      logger: logger.child({ pod: `${route.namespace}/${route.pod}`, container: route.container }),
    });
    res.end();
  } catch (err) {
    if (ac.signal.aborted) return;
    logger.warn('container log stream failed', {
      pod: `${route.namespace}/${route.pod}`,
      container: route.container,
      err: describeError(err),
    });
    if (!res.headersSent) sendText(res, 400, describeError(err));
    else res.destroy();
  } finally {
    res.off('close', onClose);
  }
}
