/**
 * What the CSI mounter is given and what it throws (upstream core/v1 CSIPersistentVolumeSource and
 * CSIVolumeSource, storage/v1 CSIDriverSpec, and pkg/volume/util/types' operation errors: a final
 * failure, or an uncertain one the driver may still be working on).
 */
import { KubeletError, type ErrorCode } from '../../util/errors.ts';

/** core/v1 SecretReference. */
export interface SecretRef {
  name: string;
  namespace?: string;
}

/** core/v1 CSIPersistentVolumeSource (the fields the node side uses). */
export interface CsiPersistentSource {
  driver: string;
  volumeHandle: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodeStageSecretRef?: SecretRef;
  nodePublishSecretRef?: SecretRef;
}

/** core/v1 CSIVolumeSource (an inline ephemeral volume in the pod). */
export interface CsiInlineSource {
  driver: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodePublishSecretRef?: { name: string };
}

export type CsiVolume =
  | {
      kind: 'persistent';
      pvName: string;
      source: CsiPersistentSource;
      /** The PV's spec.accessModes (the first decides the CSI access mode, as upstream). */
      accessModes?: string[];
      mountOptions?: string[];
      /** The claim reference's or the PV's readOnly (upstream spec.ReadOnly). */
      readOnly: boolean;
    }
  | { kind: 'ephemeral'; volumeName: string; source: CsiInlineSource };

export interface CsiPodRef {
  uid: string;
  name: string;
  namespace: string;
  serviceAccountName?: string;
  /** The pod's securityContext.fsGroup and fsGroupChangePolicy (applied per the CSIDriver's fsGroupPolicy). */
  fsGroup?: number;
  fsGroupChangePolicy?: string;
}

/** storage.k8s.io/v1 CSIDriver spec (the fields the kubelet reads). */
export interface CsiDriverSpec {
  attachRequired?: boolean;
  podInfoOnMount?: boolean;
  volumeLifecycleModes?: string[];
  /**
   * Whether the kubelet applies a pod's fsGroup to the driver's volumes (1.20 beta, on by default):
   * `ReadWriteOnceWithFSType` (the API server's default), `File` or `None`.
   */
  fsGroupPolicy?: string;
}

export type CsiStep = 'prepare' | 'stage' | 'publish' | 'unpublish' | 'unstage' | 'stats';

/** A CSI set-up or tear-down failure. */
export class CsiVolumeError extends KubeletError {
  readonly step: CsiStep;
  /** The driver may still be working on it (a timeout, a driver busy or gone mid-call). */
  readonly uncertain: boolean;

  constructor(
    code: ErrorCode,
    step: CsiStep,
    message: string,
    options?: { cause?: unknown; uncertain?: boolean },
  ) {
    super(code, `CSI ${step}`, message, options);
    this.name = 'CsiVolumeError';
    this.step = step;
    this.uncertain = options?.uncertain ?? false;
  }
}

export function isCsiVolumeError(err: unknown): err is CsiVolumeError {
  return err instanceof CsiVolumeError;
}
