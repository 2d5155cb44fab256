/**
 * The CSIPlugin registration handler the plugin watcher calls (upstream pkg/volume/csi/csi_plugin.go
 * RegistrationHandler: ValidatePlugin, RegisterPlugin, DeRegisterPlugin). Validation checks the
 * versions (a 1.x, not lower than an already registered driver of the same name's); registration
 * stores the driver, asks it NodeGetInfo (csiTimeout) and installs it on the node (CSINode, the
 * node-ID annotation, topology labels); a failure there unregisters it again. Deregistration removes
 * it from the store and uninstalls it (a failure goes back to the watcher, which reports it).
 */
import { KubeletError, describeError } from '../../util/errors.ts';
import type { Logger } from '../../util/logger.ts';
import { CSI_TIMEOUT_MS, type CsiClient } from './csi-client.ts';
import { highestSupportedVersion, versionLess, type DriverStore, type Version } from './drivers.ts';
import type { NodeInfoManager } from './node-info.ts';
import type { PluginHandler } from './plugin-watcher.ts';

/** Upstream pluginregistration constants.go CSIPlugin. */
export const CSI_PLUGIN_TYPE = 'CSIPlugin';

export interface CsiRegistrationOptions {
  drivers: DriverStore;
  /** Absent standalone: nothing is written to the API (upstream skips the node info without a client). */
  nodeInfo?: NodeInfoManager;
  clientFor: (endpoint: string, driverName: string) => CsiClient;
  logger: Logger;
  /** NodeGetInfo's deadline (default csiTimeout). */
  nodeGetInfoTimeoutMs?: number;
}

export function createCsiRegistrationHandler(opts: CsiRegistrationOptions): PluginHandler {
  const log = opts.logger.child({ component: 'csi' });

  function validateVersions(caller: string, name: string, versions: string[]): Version {
    let v: Version;
    try {
      v = highestSupportedVersion(versions);
    } catch (err) {
      throw new KubeletError(
        'InvalidArgument',
        caller,
        `${caller} for CSI driver ${JSON.stringify(name)} failed. None of the versions specified ${JSON.stringify(versions)} are supported. err=${describeError(err)}`,
      );
    }
    const existing = opts.drivers.get(name);
    if (existing && !versionLess(existing.highestSupportedVersion, v))
      throw new KubeletError(
        'AlreadyExists',
        caller,
        `${caller} for CSI driver ${JSON.stringify(name)} failed. Another driver with the same name is already registered with a higher supported version: ${JSON.stringify(existing.highestSupportedVersion.text)}`,
      );
    return v;
  }

  async function unregister(name: string): Promise<void> {
    opts.drivers.delete(name);
    await opts.nodeInfo?.uninstallDriver(name);
  }

  return {
    validatePlugin(name, endpoint, versions) {
      log.info('trying to validate a new CSI driver', { driver: name, endpoint, versions });
      try {
        validateVersions('ValidatePlugin', name, versions);
      } catch (err) {
        return Promise.reject(
          new KubeletError(
            'InvalidArgument',
            'ValidatePlugin',
            `validation failed for CSI Driver ${name} at endpoint ${endpoint}: ${describeError(err)}`,
            { cause: err },
          ),
        );
      }
      return Promise.resolve();
    },

    async registerPlugin(name, endpoint, versions, signal) {
      log.info('registering a new CSI driver', { driver: name, endpoint });
      const highest = validateVersions('RegisterPlugin', name, versions);
      opts.drivers.set({ name, endpoint, highestSupportedVersion: highest });
      try {
        const info = await opts
          .clientFor(endpoint, name)
          .nodeGetInfo({ timeoutMs: opts.nodeGetInfoTimeoutMs ?? CSI_TIMEOUT_MS, signal });
        await opts.nodeInfo?.installDriver(
          name,
          info.nodeId,
          info.maxVolumesPerNode ?? 0,
          info.accessibleTopology?.segments ?? {},
        );
      } catch (err) {
        await unregister(name).catch((unregErr: unknown) =>
          log.error('failed to unregister the CSI driver after a failed registration', {
            driver: name,
            endpoint,
            error: describeError(unregErr),
          }),
        );
        throw err;
      }
    },

    async deregisterPlugin(name) {
      log.info('deregistering the CSI driver', { driver: name });
      // Failures reach the plugin watcher, which logs them with the socket and records a Node event.
      await unregister(name);
    },
  };
}
