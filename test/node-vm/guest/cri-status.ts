/**
 * Run inside the node VM (by test/node-vm/boot.test.ts, with the checkout's Node over 9p): asks the
 * guest's containerd over CRI for its version and its verbose status, and prints one JSON line with
 * the runtime conditions and the runc cgroup driver the CRI plugin runs with. The equivalent of
 * `crictl info` (kubernetes-sigs/cri-tools cmd/crictl/info.go), which the guest does not have.
 */
import {
  criCall,
  criVersion,
  getMessages,
  getString,
  getVarint,
  pbVarint,
  type Decoded,
} from '../../harness/cri-mini.ts';

const socket = process.argv[2] ?? '/run/containerd/containerd.sock';
const version = await criVersion(socket, 30_000);
// StatusRequest{verbose = 1}; StatusResponse{status = 1 {conditions = 1}, info = 2 (map)}.
const status = await criCall(socket, 'Status', pbVarint(1, 1), 30_000);
const conditions = getMessages(getMessages(status, 1)[0] ?? (new Map() as Decoded), 1).map((c) => ({
  type: getString(c, 1),
  status: getVarint(c, 2) === 1n,
  reason: getString(c, 3),
}));
const info = new Map(getMessages(status, 2).map((e) => [getString(e, 1), getString(e, 2)]));
const config: unknown = JSON.parse(info.get('config') ?? '{}');
const runc = (config as { containerd?: { runtimes?: Record<string, { options?: Record<string, unknown> }> } })
  .containerd?.runtimes?.runc;
process.stdout.write(
  `${JSON.stringify({ version, conditions, systemdCgroup: runc?.options?.SystemdCgroup ?? null })}\n`,
);
