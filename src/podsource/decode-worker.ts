/**
 * Worker-thread entry of the manifest decoder (offload.ts): decodes one large manifest or HTTP
 * body at a time, off the kubelet's event loop, and answers with the pods or the refusal.
 */
import { parentPort } from 'node:worker_threads';
import { describeError, isKubeletError } from '../util/errors.ts';
import { decodeHttpBody } from './http-source.ts';
import { parseManifest } from './decode.ts';
import { defaultStaticPod } from './static-pod.ts';
import type { DecodeReply, DecodeRequest } from './offload.ts';

function handle(req: DecodeRequest): DecodeReply {
  try {
    const pods =
      req.kind === 'file'
        ? [
            defaultStaticPod(parseManifest(req.text, req.origin), {
              nodeName: req.nodeName,
              source: 'file',
              origin: req.origin,
            }),
          ]
        : decodeHttpBody(req.text, req.origin, req.nodeName);
    return { id: req.id, ok: true, pods };
  } catch (err) {
    if (isKubeletError(err))
      return { id: req.id, ok: false, code: err.code, op: err.op, message: err.message };
    return {
      id: req.id,
      ok: false,
      code: 'Internal',
      op: `decode ${req.origin}`,
      message: describeError(err),
    };
  }
}

parentPort?.on('message', (req: DecodeRequest) => {
  parentPort?.postMessage(handle(req));
});
