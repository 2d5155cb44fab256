/**
 * Method calls and property reads on the system D-Bus through systemd's `busctl`, each under a
 * deadline. Upstream talks D-Bus in-process (godbus, coreos/go-systemd); Node has no D-Bus client
 * in its standard library, and busctl is on every systemd node. Shared by the logind client
 * (graceful node shutdown) and the systemd cgroup driver. The tool honours
 * DBUS_SYSTEM_BUS_ADDRESS, which is how tests put a fake service under it.
 */
import { KubeletError, type ErrorCode } from './errors.ts';
import { runCommand } from './child-process.ts';

const DEFAULT_CALL_TIMEOUT_MS = 10_000;

export interface SystemBusOptions {
  /** The tool's environment (default: the kubelet's). */
  env?: NodeJS.ProcessEnv;
  /** Deadline of one call (default 10 s); busctl gets whole seconds, we wait 2 s longer. */
  callTimeoutMs?: number;
  /** Path of busctl (default: found on PATH). */
  busctl?: string;
}

/** A D-Bus object address: service (destination), object path, interface. */
export interface BusObject {
  service: string;
  path: string;
  interface: string;
}

export interface SystemBus {
  /**
   * Calls `method` with busctl's argument syntax (`signature` then the values, arrays as a count
   * followed by their items) and resolves busctl's reply text (`o "/org/…/job/42"`). A D-Bus error
   * reply rejects with a KubeletError whose message carries the service's error text; its code is
   * AlreadyExists / NotFound when that text says so, else Unavailable.
   */
  call(
    op: string,
    target: BusObject,
    method: string,
    signature: string,
    args: readonly string[],
    signal?: AbortSignal,
  ): Promise<string>;
  /** A property's reply text (`t 5000000`), with the same errors as `call`. */
  getProperty(op: string, target: BusObject, property: string, signal?: AbortSignal): Promise<string>;
}

/** The code a D-Bus error text maps to (busctl prints the error's message, not its name). */
function errorCodeOf(text: string): ErrorCode {
  if (/already exists/i.test(text)) return 'AlreadyExists';
  if (/not loaded|no such|not found|unknown object/i.test(text)) return 'NotFound';
  return 'Unavailable';
}

export function createSystemBus(opts: SystemBusOptions = {}): SystemBus {
  const env = opts.env ?? process.env;
  const timeoutMs = opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const busctl = opts.busctl ?? 'busctl';
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));

  async function busctlRun(op: string, args: readonly string[], signal?: AbortSignal): Promise<string> {
    // `--` ends busctl's options: arguments such as the root slice `-.slice` are not options.
    const result = await runCommand(busctl, ['--system', `--timeout=${seconds}`, '--', ...args], {
      timeoutMs: seconds * 1000 + 2_000,
      env,
      ...(signal ? { signal } : {}),
    });
    if (result.timedOut)
      throw new KubeletError('DeadlineExceeded', op, `busctl did not answer in ${seconds}s`);
    if (result.code !== 0) {
      const why = result.stderr.trim() || `busctl exited with code ${result.code}`;
      throw new KubeletError(errorCodeOf(why), op, `system D-Bus: ${why}`);
    }
    return result.stdout;
  }

  return {
    call: (op, target, method, signature, args, signal) =>
      busctlRun(
        op,
        ['call', target.service, target.path, target.interface, method, signature, ...args],
        signal,
      ),
    getProperty: (op, target, property, signal) =>
      busctlRun(op, ['get-property', target.service, target.path, target.interface, property], signal),
  };
}
