export { createCriClient, type CriClient, type CriClientOptions } from './client.ts';
export { CriError, isCriError, isCriNotFound, errorCodeForGrpc } from './errors.ts';
export type * from './types.ts';
