// The kit's Node Ready wait (test/kit/kubectl.ts) on a scripted kubectl. No upstream counterpart
// (the e2e framework's WaitForNodeToBeReady polls the API directly).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nodeReadyStatus, untilNodeReady, type Kubectl, type KubectlResult } from './kubectl.ts';

/** A kubectl answering `get node` with the results given, one per call, the last one repeated. */
function scripted(...answers: KubectlResult[]): Kubectl & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    calls,
    run(args) {
      calls.push(args);
      return Promise.resolve(answers[Math.min(calls.length, answers.length) - 1] as KubectlResult);
    },
    ok: () => Promise.reject(new Error('not scripted')),
  };
}

const notFound: KubectlResult = { code: 1, stdout: '', stderr: 'Error from server (NotFound)' };
const status = (s: string): KubectlResult => ({ code: 0, stdout: s, stderr: '' });

describe('the Node Ready wait', () => {
  it('reads the Ready condition, and nothing while the Node or its condition is missing', async () => {
    const k = scripted(notFound, status(''), status('False'));
    assert.equal(await nodeReadyStatus(k, 'n1'), undefined);
    assert.equal(await nodeReadyStatus(k, 'n1'), undefined);
    assert.equal(await nodeReadyStatus(k, 'n1'), 'False');
    assert.deepEqual(k.calls[0], [
      'get',
      'node',
      'n1',
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
    ]);
  });

  it('waits through an unregistered and a NotReady Node until Ready=True', async () => {
    const k = scripted(notFound, status('False'), status('True'));
    await untilNodeReady(k, 'n1', { intervalMs: 1 });
    assert.equal(k.calls.length, 3);
  });

  it('fails at once when the kubelet is no longer alive', async () => {
    const k = scripted(status('False'));
    await assert.rejects(
      untilNodeReady(k, 'n1', {
        intervalMs: 1,
        alive: () => Promise.reject(new Error('tskubelet exited 1')),
      }),
      /tskubelet exited 1/,
    );
    assert.equal(k.calls.length, 0);
  });

  it('names the node when the time is up', async () => {
    await assert.rejects(
      untilNodeReady(scripted(status('Unknown')), 'n1', { intervalMs: 1, timeoutMs: 20 }),
      /timed out waiting for node n1 Ready .*last value: false/,
    );
  });
});
