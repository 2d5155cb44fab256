// The image side of the runtime (upstream pkg/kubelet/images and pkg/credentialprovider): pull policy,
// pull back-off, registry credentials from pull secrets and the node's docker config.
export {
  createImageManager,
  ImageError,
  type ImageErrorReason,
  type ImageManager,
  type ImagePullState,
} from './image-manager.ts';
export { createNodeCredentials } from './node-credentials.ts';
