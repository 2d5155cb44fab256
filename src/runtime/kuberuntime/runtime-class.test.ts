// RuntimeClass on the runtime manager (upstream kuberuntime_sandbox.go createPodSandbox): the pod's
// runtimeClassName resolved to a handler that RunPodSandbox receives, and each way that can fail.
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { KubeletPod } from '../../api/types.ts';
import type { RuntimeClassLookup } from '../../api/runtime-class-informer.ts';
import { createRuntimeManager } from './runtime-manager.ts';
import { fakeRuntimeDeps, makePod, stateOf } from '../testing.ts';

/** RuntimeClass name → handler, answering as the informer does once it has listed. */
function classes(known: Map<string, string>): RuntimeClassLookup {
  return {
    lookupRuntimeHandler: (name) => {
      if (!name) return { ok: true, handler: '' };
      const handler = known.get(name);
      return handler === undefined
        ? { ok: false, message: `runtimeclasses.node.k8s.io "${name}" not found` }
        : { ok: true, handler };
    },
  };
}

async function setup(t: TestContext, known: Map<string, string> | undefined) {
  const f = await fakeRuntimeDeps(t);
  f.cri.runtimeHandlers.add('runc-test');
  const manager = createRuntimeManager({ ...f.deps, ...(known ? { runtimeClasses: classes(known) } : {}) });
  const sync = async (pod: KubeletPod) =>
    manager.syncPod(
      pod,
      await manager.getPodStatus(pod.metadata.uid, pod.metadata.name, pod.metadata.namespace),
    );
  const handlersAsked = () => f.cri.callsTo('runPodSandbox').map((args) => args[1]);
  return { ...f, manager, sync, handlersAsked };
}

function withClass(pod: KubeletPod, runtimeClassName: string): KubeletPod {
  return { ...pod, spec: { ...pod.spec, runtimeClassName } };
}

describe('RuntimeClass: the pod’s handler reaches RunPodSandbox', () => {
  it('passes the handler of the pod’s RuntimeClass as runtime_handler, and the sandbox runs under it', async (t) => {
    const s = await setup(t, new Map([['sandboxed', 'runc-test']]));
    const pod = withClass(makePod('web', ['app']), 'sandboxed');
    const r = await s.sync(pod);
    assert.equal(r.sandboxError, undefined);
    assert.deepEqual(s.handlersAsked(), ['runc-test']);
    assert.deepEqual(
      [...s.cri.sandboxes.values()].map((sb) => sb.status.runtimeHandler),
      ['runc-test'],
    );
    assert.deepEqual(stateOf(await s.manager.getPodStatus(pod.metadata.uid, 'web', 'ns')), {
      app: 'running',
    });
  });

  it('passes the default handler (empty) for a pod without a runtimeClassName', async (t) => {
    const s = await setup(t, new Map());
    await s.sync(makePod('web', ['app']));
    assert.deepEqual(s.handlersAsked(), ['']);
  });

  it('an unknown RuntimeClass: no RunPodSandbox, FailedCreatePodSandBox with the NotFound text, retried until the class exists', async (t) => {
    const known = new Map<string, string>();
    const s = await setup(t, known);
    const pod = withClass(makePod('web', ['app']), 'kata');

    let r = await s.sync(pod);
    const message = 'Failed to create pod sandbox: runtimeclasses.node.k8s.io "kata" not found';
    assert.equal(r.sandboxError, message);
    assert.deepEqual(s.handlersAsked(), [], 'the runtime is not asked');
    const ev = s.recorder.events.find((e) => e.reason === 'FailedCreatePodSandBox');
    assert.deepEqual([ev?.type, ev?.message], ['Warning', message]);
    const logged = s.logger.lines.find((l) => l.msg === 'failed to create pod sandbox');
    assert.equal(logged?.level, 'warn');
    assert.deepEqual([logged?.fields.pod, logged?.fields.podUID], ['ns/web', pod.metadata.uid]);

    known.set('kata', 'runc-test');
    r = await s.sync(pod);
    assert.equal(r.sandboxError, undefined);
    assert.deepEqual(r.started, ['app']);
    assert.deepEqual(s.handlersAsked(), ['runc-test']);
  });

  it('a handler the runtime has not configured: FailedCreatePodSandBox with the runtime’s error', async (t) => {
    const s = await setup(t, new Map([['gvisor', 'runsc']]));
    const r = await s.sync(withClass(makePod('web', ['app']), 'gvisor'));
    assert.match(
      r.sandboxError ?? '',
      /^Failed to create pod sandbox: .*failed to get sandbox runtime: no runtime for "runsc" is configured/,
    );
    assert.deepEqual(s.handlersAsked(), ['runsc']);
    assert.equal(s.cri.sandboxes.size, 0);
    assert.ok(s.reasons().includes('FailedCreatePodSandBox'));
  });

  it('standalone (no RuntimeClass lookup): the default handler runs the pod, and the runtimeClassName is warned about', async (t) => {
    const s = await setup(t, undefined);
    const r = await s.sync(withClass(makePod('web', ['app']), 'kata'));
    assert.equal(r.sandboxError, undefined);
    assert.deepEqual(s.handlersAsked(), ['']);
    const warned = s.logger.lines.find((l) => l.level === 'warn' && l.fields.runtimeClassName === 'kata');
    assert.equal(warned?.fields.pod, 'ns/web');
  });
});
