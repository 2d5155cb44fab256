// A container's environment (upstream kubelet_pods.go makeEnvironmentVariables and
// third_party/forked/golang/expansion): literal values, field and resource refs, ConfigMap and Secret
// sources, service links, and $(VAR) expansion.
export { makeEnvironment, literalEnvironment } from './env.ts';
export { expandVars, expandSubPathExpr } from './expand.ts';
export type { ServiceLister } from './service-env.ts';
