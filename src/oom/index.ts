/**
 * The system OOM watcher (upstream pkg/kubelet/oom over cadvisor's utils/oomparser): follows the
 * kernel log from its end, recognises OOM kills, records a `SystemOOM` Warning event on the Node
 * for a kill whose victim cgroup is the root, and hands every kill to a callback.
 */
export {
  createOomWatcher,
  describeOom,
  systemOOMMessage,
  SYSTEM_OOM_EVENT,
  type OomWatcher,
  type OomWatcherDeps,
  type OomWatcherStats,
} from './oom-watcher.ts';
export { createOomParser, ROOT_CGROUP, type OomInstance, type OomParser } from './oom-parser.ts';
export { devKmsgOpener, DEV_KMSG, type DevKmsgOptions, type KmsgSource, type OpenKmsg } from './dev-kmsg.ts';
export { LineSplitter, parseKmsgRecord, type KmsgRecord } from './kmsg-record.ts';
