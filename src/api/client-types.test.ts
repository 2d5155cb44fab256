import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KubeletError, isNotFound, type ErrorCode } from '../util/errors.ts';
import {
  ApiError,
  QuietWatchError,
  isAlreadyExists,
  isApiStatus,
  isConflict,
  isGone,
  isQuietWatch,
} from './client-types.ts';

describe('ApiError', () => {
  it('maps HTTP statuses to error codes', () => {
    const cases: [number, ErrorCode][] = [
      [400, 'InvalidArgument'],
      [422, 'InvalidArgument'],
      [401, 'Unauthenticated'],
      [403, 'PermissionDenied'],
      [404, 'NotFound'],
      [409, 'AlreadyExists'],
      [410, 'FailedPrecondition'],
      [429, 'ResourceExhausted'],
      [504, 'DeadlineExceeded'],
      [500, 'Unavailable'],
      [503, 'Unavailable'],
      [418, 'Unknown'],
    ];
    for (const [status, code] of cases) {
      assert.equal(new ApiError('GET /x', status, '', 'm').code, code, `status ${status}`);
    }
  });

  it('is a KubeletError carrying op, status, reason and cause', () => {
    const cause = new Error('socket');
    const err = new ApiError('PATCH /api/v1/nodes/n', 404, 'NotFound', 'nodes "n" not found', { cause });
    assert.ok(err instanceof KubeletError);
    assert.equal(err.name, 'ApiError');
    assert.equal(err.op, 'PATCH /api/v1/nodes/n');
    assert.equal(err.status, 404);
    assert.equal(err.reason, 'NotFound');
    assert.equal(err.message, 'PATCH /api/v1/nodes/n: 404 NotFound: nodes "n" not found');
    assert.equal(err.cause, cause);
    assert.ok(isNotFound(err));
  });
});

describe('API error checks', () => {
  const alreadyExists = new ApiError('POST /p', 409, 'AlreadyExists', 'exists');
  const conflict = new ApiError('PUT /p', 409, 'Conflict', 'the object has been modified');
  const conflictNoReason = new ApiError('PUT /p', 409, '', 'not a Status body');
  const expired = new ApiError('WATCH /p', 410, 'Expired', 'too old resource version');
  const gone = new ApiError('WATCH /p', 410, 'Gone', 'gone');
  const expiredInErrorEvent = new ApiError('WATCH /p', 500, 'Expired', 'an ERROR event with an odd code');
  const plain = new KubeletError('AlreadyExists', 'create', 'not from the API');

  it('tells AlreadyExists (a create) from Conflict (an update): same 409, different reason', () => {
    assert.equal(isAlreadyExists(alreadyExists), true);
    assert.equal(isConflict(alreadyExists), false);
    assert.equal(isConflict(conflict), true);
    assert.equal(isAlreadyExists(conflict), false);
    assert.equal(isConflict(conflictNoReason), true);
  });

  it('treats 410 and the Expired/Gone reasons as gone, and nothing else', () => {
    assert.equal(isGone(expired), true);
    assert.equal(isGone(gone), true);
    assert.equal(isGone(expiredInErrorEvent), true);
    assert.equal(isGone(conflict), false);
    assert.equal(isGone(new ApiError('GET /p', 500, 'InternalError', 'boom')), false);
  });

  it('only recognises ApiErrors, not other errors with a similar code', () => {
    for (const check of [isAlreadyExists, isConflict, isGone]) {
      assert.equal(check(plain), false);
      assert.equal(check(new Error('409 AlreadyExists')), false);
      assert.equal(check(undefined), false);
    }
    assert.equal(isApiStatus(conflict, 409), true);
    assert.equal(isApiStatus(conflict, 410), false);
    assert.equal(isApiStatus(plain, 409), false);
  });
});

describe('QuietWatchError', () => {
  it('is a DeadlineExceeded KubeletError recognised by type, not by its message', () => {
    const quiet = new QuietWatchError('WATCH /api/v1/pods', 120_000);
    assert.ok(quiet instanceof KubeletError);
    assert.equal(quiet.code, 'DeadlineExceeded');
    assert.equal(quiet.idleMs, 120_000);
    assert.equal(quiet.op, 'WATCH /api/v1/pods');
    assert.equal(isQuietWatch(quiet), true);
    const lookalike = new KubeletError('DeadlineExceeded', 'WATCH /api/v1/pods', quiet.message);
    assert.equal(isQuietWatch(lookalike), false, 'a timeout that only reads like one is a real failure');
    assert.equal(isQuietWatch(new ApiError('WATCH /api/v1/pods', 504, 'Timeout', 'no watch event')), false);
    assert.equal(isGone(quiet), false);
  });
});
