import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from './client-types.ts';
import { createReflector } from './reflector.ts';
import { FakeApi } from './testing.ts';
import { flush } from '../util/testing.ts';
import { nullLogger } from '../util/logger.ts';

describe('reflector back-off', () => {
  it("waits at least the server's Retry-After before listing again after a 429", async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    t.mock.method(Math, 'random', () => 0.5);
    const api = new FakeApi();
    const throttled = new ApiError('GET /api/v1/services', 429, 'TooManyRequests', 'slow down', {
      retryAfterSeconds: 7,
    });
    api.respondOnce('GET', '/api/v1/services', throttled);
    api.respond('GET', '/api/v1/services', { metadata: { resourceVersion: '5' }, items: [] });
    const reflector = createReflector({
      api,
      path: '/api/v1/services',
      resource: 'services',
      logger: nullLogger,
      replace: () => {},
      apply: () => {},
      backoffInitialMs: 800,
    });
    reflector.start();
    await flush();
    assert.equal(api.requestsFor('GET').length, 1, 'the first LIST, throttled');
    t.mock.timers.tick(6_999); // the back-off alone would have listed again after 800 ms
    await flush();
    assert.equal(api.requestsFor('GET').length, 1, 'no LIST before the Retry-After');
    t.mock.timers.tick(1);
    await flush();
    assert.equal(api.requestsFor('GET').length, 2, 'listed again once it passed');
    assert.equal(reflector.hasSynced(), true);
    const stopped = reflector.stop();
    (await api.nextWatch()).end();
    await stopped;
  });
});
