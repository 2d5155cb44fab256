/**
 * The node status as a whole (upstream kubelet_node_status.go): every setter run in upstream order
 * (setNodeStatus), and whether a computed status differs from the server's enough to be written
 * (nodeStatusHasChanged). Pure functions over plain Node JSON; nothing here talks to the API.
 */
import { parseQuantity } from '../api/quantity.ts';
import { deepEqual } from '../util/json.ts';
import { removeOutOfDiskCondition, setPressureCondition, setReadyCondition } from './condition-setters.ts';
import { formatTime } from './format.ts';
import type { MachineInfo } from './machine-info.ts';
import type { NodeImageList, NodeStatusConfig, NodeStatusEvent, NodeStatusInputs } from './status-inputs.ts';
import {
  setAddresses,
  setDaemonEndpoints,
  setImages,
  setMachineInfo,
  setVersionInfo,
} from './status-setters.ts';
import type { Node, NodeCondition, NodeStatus } from './types.ts';

/**
 * Runs every setter on `node` in upstream order, in place (upstream setNodeStatus). Returns the
 * events the transitions call for and warnings for fields that could not be set (logged by the
 * caller; the rest of the status is still set). `images` is this round's image list (listed once
 * per status update by the caller, since this is synchronous); absent, status.images is untouched.
 */
export function setNodeStatus(
  node: Node,
  cfg: NodeStatusConfig,
  machine: MachineInfo,
  inputs: NodeStatusInputs,
  nowMs: number,
  images?: NodeImageList,
): { events: NodeStatusEvent[]; warnings: string[] } {
  const events: NodeStatusEvent[] = [];
  const warnings: string[] = [];
  const now = formatTime(nowMs);
  setAddresses(node, cfg, warnings);
  setMachineInfo(node, cfg, machine, events, warnings);
  setVersionInfo(node, cfg, machine, inputs);
  setDaemonEndpoints(node, cfg);
  setImages(node, cfg, images, warnings);
  const pressure = inputs.pressure();
  setPressureCondition(node, 'MemoryPressure', pressure.memory, now, cfg.nodeName, events);
  setPressureCondition(node, 'DiskPressure', pressure.disk, now, cfg.nodeName, events);
  setPressureCondition(node, 'PIDPressure', pressure.pid, now, cfg.nodeName, events);
  setReadyCondition(node, inputs, now, cfg.nodeName, events);
  removeOutOfDiskCondition(node);
  return { events, warnings };
}

function sameQuantities(
  a: Record<string, string> | undefined,
  b: Record<string, string> | undefined,
): boolean {
  const ka = Object.keys(a ?? {}).sort();
  const kb = Object.keys(b ?? {}).sort();
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return false;
  for (const k of ka) {
    const x = a?.[k];
    const y = b?.[k];
    if (x === y) continue;
    try {
      if (x === undefined || y === undefined || parseQuantity(x, k) !== parseQuantity(y, k)) return false;
    } catch {
      return false; // not a quantity we can parse: the strings differ, so it changed
    }
  }
  return true;
}

/**
 * upstream nodeStatusHasChanged: anything but the conditions' lastHeartbeatTime differs.
 * Quantities compare by value, so `1Gi` equals `1024Mi`.
 */
export function nodeStatusHasChanged(
  original: NodeStatus | undefined,
  current: NodeStatus | undefined,
): boolean {
  if (original === undefined && current === undefined) return false;
  if (original === undefined || current === undefined) return true;
  const strip = (cs: NodeCondition[] | undefined) =>
    [...(cs ?? [])]
      .map(({ lastHeartbeatTime: _hb, ...rest }) => rest)
      .sort((x, y) => (x.type < y.type ? -1 : x.type > y.type ? 1 : 0));
  if (!deepEqual(strip(original.conditions), strip(current.conditions))) return true;
  if (!sameQuantities(original.capacity, current.capacity)) return true;
  if (!sameQuantities(original.allocatable, current.allocatable)) return true;
  const rest = (s: NodeStatus) => {
    const { conditions: _c, capacity: _cap, allocatable: _a, ...others } = s;
    return others;
  };
  return !deepEqual(rest(original), rest(current));
}
