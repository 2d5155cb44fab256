/**
 * The attacker suite against a live tskubelet node of the bed's kube-apiserver 1.20.2: every probe
 * of probes.ts for the `cluster` node — identities with and without RBAC on every route, cross-site
 * requests, and a page of another site in headless chromium acting through `kubectl proxy`. Run
 * alone on the bed: `flock /tmp/tskubelet-bed.lock node --test test/security/cluster.test.ts`.
 */
import { startClusterTarget } from './lib/cluster.ts';
import { probeSuite } from './lib/suite.ts';

probeSuite('cluster', () => startClusterTarget('tskubelet'));
