/**
 * Pod status (upstream pkg/kubelet/status and kubelet_pods.go generateAPIPodStatus): the status
 * computed from the spec and the runtime's view, the manager that holds the latest status of every
 * pod (never leaving a terminal phase), and in cluster mode the syncer that patches it to the API.
 */
export { computePodStatus, isTerminalPhase, type WaitingReason } from './pod-status.ts';
export { needToReconcilePodReadiness } from './conditions.ts';
export { createStatusManager, type StatusManager } from './status-manager.ts';
export { createStatusSyncer, type StatusSyncer, type StatusTarget } from './api-syncer.ts';
