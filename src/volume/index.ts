export { createVolumeManager, emptyDirPath, podDir, type VolumeManager } from './volume-manager.ts';
