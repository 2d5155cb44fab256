/**
 * Upstream's CSI path layout (pkg/volume/csi csi_attacher.go makeDeviceMountPath, csi_mounter.go
 * GetPath, csi_plugin.go volDataFileName; kubelet getPluginsRegistrationDir):
 *   `<root>/plugins_registry`                                       registration sockets
 *   `<root>/plugins/kubernetes.io/csi/pv/<pv>/globalmount`          NodeStage's staging_target_path
 *   `<root>/plugins/kubernetes.io/csi/pv/<pv>/vol_data.json`        what unstaging needs
 *   `<root>/pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount`    NodePublish's target_path
 *   `<root>/pods/<uid>/volumes/kubernetes.io~csi/<volume>/vol_data.json`
 * and for volumeMode Block (csi_block.go getStagingPath / getPublishPath, csi_plugin.go
 * getVolumeDeviceDataDir, GetPodDeviceMapPath):
 *   `<root>/plugins/kubernetes.io/csi/volumeDevices/staging/<pv>`          NodeStage's staging_target_path
 *   `<root>/plugins/kubernetes.io/csi/volumeDevices/publish/<pv>/<uid>`    NodePublish's target_path (a file)
 *   `<root>/plugins/kubernetes.io/csi/volumeDevices/<pv>/data/vol_data.json`
 *   `<root>/pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>`               symlink to the publish path
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { podDir } from '../paths.ts';

export const CSI_PLUGIN_NAME = 'kubernetes.io/csi';
export const CSI_POD_PLUGIN_DIR = 'kubernetes.io~csi';
export const VOL_DATA_FILE = 'vol_data.json';

export function pluginsRegistryDir(rootDir: string): string {
  return join(rootDir, 'plugins_registry');
}

/** `<root>/plugins/kubernetes.io/csi/pv/<pv>/globalmount`. */
export function deviceMountPath(rootDir: string, pvName: string): string {
  return join(rootDir, 'plugins', CSI_PLUGIN_NAME, 'pv', pvName, 'globalmount');
}

/** `<root>/plugins/kubernetes.io/csi/volumeDevices` (upstream GetVolumeDevicePluginDir). */
export function blockPluginDir(rootDir: string): string {
  return join(rootDir, 'plugins', CSI_PLUGIN_NAME, 'volumeDevices');
}

/** `<root>/plugins/kubernetes.io/csi/volumeDevices/staging/<pv>`: a block volume's staging_target_path. */
export function blockStagingPath(rootDir: string, pvName: string): string {
  return join(blockPluginDir(rootDir), 'staging', pvName);
}

/** `<root>/plugins/kubernetes.io/csi/volumeDevices/publish/<pv>`: the parent of the pods' publish paths. */
export function blockPublishDir(rootDir: string, pvName: string): string {
  return join(blockPluginDir(rootDir), 'publish', pvName);
}

/** `<root>/plugins/kubernetes.io/csi/volumeDevices/publish/<pv>/<uid>`: a pod's block target_path. */
export function blockPublishPath(rootDir: string, pvName: string, podUID: string): string {
  return join(blockPublishDir(rootDir, pvName), podUID);
}

/** `<root>/plugins/kubernetes.io/csi/volumeDevices/<pv>`: the PV's dir (holding `data/vol_data.json`). */
export function blockVolumeDir(rootDir: string, pvName: string): string {
  return join(blockPluginDir(rootDir), pvName);
}

/** `<root>/pods/<uid>/volumeDevices/kubernetes.io~csi`: the pod's CSI device links. */
export function podBlockDevicesDir(rootDir: string, podUID: string): string {
  return join(podDir(rootDir, podUID), 'volumeDevices', CSI_POD_PLUGIN_DIR);
}

/** `<root>/pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>`: the link a container's device resolves. */
export function podBlockDevicePath(rootDir: string, podUID: string, pvName: string): string {
  return join(podBlockDevicesDir(rootDir, podUID), pvName);
}

/** `<root>/pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount`. */
export function podVolumeMountPath(rootDir: string, podUID: string, volume: string): string {
  return join(podVolumesDir(rootDir, podUID), volume, 'mount');
}

export function podVolumesDir(rootDir: string, podUID: string): string {
  return join(podDir(rootDir, podUID), 'volumes', CSI_POD_PLUGIN_DIR);
}

/** Upstream getAttachmentName: the VolumeAttachment's name, `csi-<sha256(handle+driver+node)>`. */
export function attachmentName(volumeHandle: string, driver: string, nodeName: string): string {
  return `csi-${createHash('sha256').update(`${volumeHandle}${driver}${nodeName}`).digest('hex')}`;
}

/** Upstream makeVolumeHandle: an inline volume's handle, `csi-<sha256(podUID+volume)>`. */
export function ephemeralVolumeHandle(podUID: string, volume: string): string {
  return `csi-${createHash('sha256').update(`${podUID}${volume}`).digest('hex')}`;
}
