/**
 * Upstream constants for container logs, each with the name it mirrors. They belong in
 * `config/defaults.ts` with the others; they live here until that file can take them.
 */

/** pkg/kubelet/kuberuntime/logs/logs.go */
export const LOG_FORCE_CHECK_PERIOD_MS = 1_000; // logForceCheckPeriod: re-read a followed file at least this often

/** pkg/util/tail: upstream reads 1 KiB blocks backwards; we read larger ones (fewer syscalls). */
export const TAIL_BLOCK_BYTES = 64 * 1024;

/** pkg/kubelet/logs/container_log_manager.go */
export const LOG_MONITOR_PERIOD_MS = 10_000; // logMonitorPeriod
export const LOG_SIZE_CHECK_INTERVAL_MS = 1_000; // tskubelet: stat of known live log files between passes
export const ROTATED_LOG_COMPRESS_SUFFIX = '.gz'; // compressSuffix
export const ROTATED_LOG_TMP_SUFFIX = '.tmp'; // tmpSuffix

/** Ours, not upstream's: bounds for the reader and the rotation loop. */
/** Bytes read from the log file per read(2). */
export const READ_CHUNK_BYTES = 64 * 1024;
/** One record longer than this without a newline is dropped (containerd splits at 16 KiB). */
export const MAX_RECORD_BYTES = 1024 * 1024;
/** A line split into `P` records is held up to this size, then written out as it comes. */
export const MAX_JOINED_LINE_BYTES = 1024 * 1024;
/** Deadline of each CRI call the rotation loop makes. */
export const LOG_ROTATION_CRI_TIMEOUT_MS = 10_000;
/** At most this many files are rotated in one pass; the rest wait for the next one. */
export const MAX_ROTATIONS_PER_PASS = 32;
/** A whole pass (all CRI calls, compression) is cut off after this long. */
export const LOG_ROTATION_PASS_TIMEOUT_MS = 5 * 60_000;
