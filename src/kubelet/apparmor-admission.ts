/**
 * The AppArmor admission handler (upstream pkg/security/apparmor validator + lifecycle
 * appArmorAdmitHandler): a pending pod that asks for any AppArmor profile other than unconfined is
 * refused when the host cannot enforce AppArmor, with reason `AppArmor`.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { Pod } from '../api/types.ts';
import { appArmorProfileOf, appArmorRequired } from '../runtime/index.ts';
import { describeError } from '../util/errors.ts';
import type { PodAdmitHandler } from './admission.ts';

/** Upstream AppArmorNotAdmittedReason. */
export const APPARMOR_NOT_ADMITTED_REASON = 'AppArmor';

/**
 * runc's apparmor.IsEnabled: the securityfs directory exists and the module parameter says `Y`.
 * Read once, when the kubelet is built: enabling AppArmor takes a reboot (and a kubelet restart).
 */
export function hostAppArmorEnabled(
  readParam: () => string = () => readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8'),
  securityFsExists: () => boolean = () => existsSync('/sys/kernel/security/apparmor'),
): boolean {
  if (!securityFsExists()) return false;
  try {
    return readParam().startsWith('Y');
  } catch {
    // No module parameter (AppArmor not built in): not enabled, which is what runc concludes too.
    return false;
  }
}

export interface AppArmorAdmitOptions {
  /** Whether the host enforces AppArmor; default `hostAppArmorEnabled()`. */
  enabled?: boolean;
}

/** Upstream validator.Validate: the error text, undefined when the pod can run here. */
export function validateAppArmor(pod: Pod, enabled: boolean): string | undefined {
  if (!appArmorRequired(pod)) return undefined;
  if (!enabled) return 'AppArmor is not enabled on the host';
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    let profile;
    try {
      profile = appArmorProfileOf(pod, c);
    } catch (err) {
      return describeError(err);
    }
    if (profile?.type === 'Localhost' && (profile.localhostProfile ?? '').trim() === '') {
      return `invalid empty AppArmor profile name for container ${JSON.stringify(c.name)}`;
    }
  }
  return undefined;
}

/**
 * Upstream NewAppArmorAdmitHandler. Only pending pods are checked: one already running or finished
 * (e.g. found again after a restart) is not re-judged.
 */
export function appArmorAdmitHandler(opts: AppArmorAdmitOptions = {}): PodAdmitHandler {
  const enabled = opts.enabled ?? hostAppArmorEnabled();
  return {
    name: 'AppArmor',
    admit(pod) {
      const phase = pod.status?.phase;
      if (phase !== undefined && phase !== 'Pending') return { admit: true };
      const why = validateAppArmor(pod, enabled);
      if (why === undefined) return { admit: true };
      return {
        admit: false,
        reason: APPARMOR_NOT_ADMITTED_REASON,
        message: `Cannot enforce AppArmor: ${why}`,
      };
    },
  };
}
