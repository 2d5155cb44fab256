/**
 * In-memory CRI services for unit tests (upstream cri-api `apis/testing`), not exported from
 * index.ts and not part of the build: `FakeRuntimeService` (sandboxes and containers with
 * containerd's lifecycle) and `FakeImageService` (images by ID, tag and digest; PullImage adds one).
 *
 * Every method of both takes injected behaviour: errors (`injectError(method, 'UNAVAILABLE',
 * { once: true })`), a latency (`setLatency(method, ms)`, Infinity blocks), and every call is logged
 * (`calls`, `called()`, `callsTo(method)`). Latencies, deadlines and StopContainer's grace period
 * wait on the clock: `Date.now()` and `setTimeout` by default, looked up at each call, so node:test's
 * mock timers drive them. The caller's AbortSignal and `timeoutMs` are honoured with the real
 * client's errors (a Canceled or DeadlineExceeded CriError).
 */
export { FakeRuntimeService, type FakeContainer, type FakeSandbox } from './fake-runtime.ts';
export { FakeImageService, normalizeImageRef } from './fake-image.ts';
export {
  criError,
  type FakeCall,
  type FakeClock,
  type FakeServiceOptions,
  type GrpcCodeName,
} from './fake-service.ts';
