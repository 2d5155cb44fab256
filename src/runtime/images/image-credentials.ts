/**
 * The credentials an image is pulled with (upstream MakeDockerKeyring and its lookup): the pod's
 * imagePullSecrets first, then the node's own credentials, those matching the image's repository.
 */
import type { KubeletPod } from '../../api/types.ts';
import { untilAborted } from '../../util/abort.ts';
import { describeError } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';
import {
  EMPTY_KEYRING,
  keyringFromSecrets,
  unionKeyring,
  type Keyring,
  type PullSecret,
  type RegistryCredential,
} from './pull-secrets.ts';

export interface ImageCredentialsDeps {
  /**
   * The pod's imagePullSecrets, resolved (cluster mode: read from the API; a secret that cannot be
   * read is left out, as upstream does). Absent: no secrets (standalone). A rejection is logged and
   * the pull goes on without secrets, as upstream does when it cannot read them.
   */
  pullSecrets?: (pod: KubeletPod, signal?: AbortSignal) => Promise<PullSecret[]>;
  /**
   * The node's own credentials (its docker config file, src/runtime/node-credentials.ts), looked
   * up after the pod's secrets, as upstream's default keyring. Absent: none. A rejection is logged
   * and the pull goes on with the pod's credentials only.
   */
  nodeCredentials?: () => Promise<Keyring>;
}

/**
 * The credentials matching `repository`, each to be tried in turn. Secrets or node credentials that
 * cannot be read are logged and left out (as upstream); rejects when `signal` aborts or a secret
 * does not parse.
 */
export type ImageCredentials = (
  pod: KubeletPod,
  repository: string,
  signal: AbortSignal | undefined,
  plog: Logger,
) => Promise<readonly RegistryCredential[]>;

export function createImageCredentials(deps: ImageCredentialsDeps): ImageCredentials {
  async function secretsFor(
    pod: KubeletPod,
    signal: AbortSignal | undefined,
    plog: Logger,
  ): Promise<PullSecret[]> {
    if (!deps.pullSecrets || (pod.spec.imagePullSecrets ?? []).length === 0) return [];
    try {
      return await deps.pullSecrets(pod, signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      plog.warn('Unable to retrieve pull secrets; the image pull may not succeed', {
        err: describeError(err),
      });
      return [];
    }
  }

  async function nodeKeyring(signal: AbortSignal | undefined, plog: Logger): Promise<Keyring> {
    if (!deps.nodeCredentials) return EMPTY_KEYRING;
    try {
      return await untilAborted(deps.nodeCredentials(), signal);
    } catch (err) {
      if (signal?.aborted) throw err;
      plog.warn('Unable to read the node registry credentials; pulling with the pod secrets only', {
        err: describeError(err),
      });
      return EMPTY_KEYRING;
    }
  }

  return async (pod, repository, signal, plog) => {
    const secrets = await secretsFor(pod, signal, plog);
    // Upstream MakeDockerKeyring: the pod's secrets first, then the node's own credentials.
    const keyring = unionKeyring(keyringFromSecrets(secrets), await nodeKeyring(signal, plog));
    return keyring.lookup(repository);
  };
}
