/**
 * A downward API volume's files (upstream pkg/volume/downwardapi CollectData); the values come from
 * api/fieldpath.ts, shared with environment variables.
 */
import type { KubeletPod } from '../api/types.ts';
import { containerResourceValue, podFieldValue, type NodeAllocatable } from '../api/fieldpath.ts';
import { KubeletError, describeError } from '../util/errors.ts';
import type { FileProjection } from './atomic-writer.ts';
import type { DownwardAPIVolumeFile } from './volume-sources.ts';

export type { NodeAllocatable } from '../api/fieldpath.ts';

/**
 * The files of a downward API volume (or projection): one per item, mode = item mode or the default.
 * Every item is tried; all failures are reported together (upstream aggregates them too).
 */
export function downwardAPIPayload(
  pod: KubeletPod,
  items: DownwardAPIVolumeFile[],
  defaultMode: number,
  allocatable: NodeAllocatable,
  op: string,
): Map<string, FileProjection> {
  const payload = new Map<string, FileProjection>();
  const errors: string[] = [];
  for (const item of items) {
    try {
      const text = item.fieldRef
        ? podFieldValue(pod, item.fieldRef.fieldPath)
        : containerResourceValue(
            pod,
            item.resourceFieldRef?.containerName,
            item.resourceFieldRef?.resource ?? '',
            item.resourceFieldRef?.divisor,
            allocatable,
          );
      payload.set(item.path, { data: Buffer.from(text), mode: item.mode ?? defaultMode });
    } catch (err) {
      errors.push(`${item.path}: ${describeError(err)}`);
    }
  }
  if (errors.length > 0) throw new KubeletError('InvalidArgument', op, errors.join('; '));
  return payload;
}
