/**
 * The attacker suite against live standalone tskubelet processes on the bed's containerd: every
 * probe of probes.ts for the `standalone` and `standalone-hostile` nodes, made as `nobody` and from
 * a headless chromium. Run alone on the bed:
 * `flock /tmp/tskubelet-bed.lock node --test test/security/standalone.test.ts`.
 */
import { startStandaloneTarget } from './lib/standalone.ts';
import { probeSuite } from './lib/suite.ts';

probeSuite('standalone', () => startStandaloneTarget('standalone'));
probeSuite('standalone-hostile', () => startStandaloneTarget('standalone-hostile'));
