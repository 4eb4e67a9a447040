import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decideLease, microTime, releasedLease, type LeaseSpec } from '../../src/api/lease-election.js';

const now = new Date('2026-12-01T23:00:00.123Z');
const stamp = '2026-12-01T23:00:00.123000Z';

describe('decideLease (client-go tryAcquireOrRenew)', () => {
  it('creates a Lease that does not exist: this identity holds it, no transition yet', () => {
    const decision = decideLease(undefined, undefined, 'me', 15, 1_000, now);
    assert.deepEqual(decision, {
      write: true,
      spec: { holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: stamp, renewTime: stamp, leaseTransitions: 0 },
      observation: { record: 'null', atMs: 1_000 },
    });
  });

  const heldByOther: LeaseSpec = {
    holderIdentity: 'other',
    leaseDurationSeconds: 15,
    acquireTime: '2026-12-01T22:00:00.000000Z',
    renewTime: '2026-12-01T22:59:59.000000Z',
    leaseTransitions: 4,
  };

  it("leaves another's Lease alone until its record has not changed for its duration, by this replica's clock", () => {
    const first = decideLease(heldByOther, undefined, 'me', 15, 1_000, now);
    assert.equal(first.write, false);
    // 14.999 s later, the same record: still held.
    const later = decideLease(heldByOther, first.observation, 'me', 15, 15_999, now);
    assert.equal(later.write, false);
    assert.deepEqual(later.observation, first.observation);
    // 15 s after it was first seen: taken over, one more transition, a new acquireTime.
    const taken = decideLease(heldByOther, first.observation, 'me', 15, 16_000, now);
    assert.ok(taken.write);
    assert.deepEqual(taken.spec, {
      holderIdentity: 'me',
      leaseDurationSeconds: 15,
      acquireTime: stamp,
      renewTime: stamp,
      leaseTransitions: 5,
    });
  });

  it("a renewal by the holder (a changed record) restarts the wait: the holder's renewTime is never compared with this clock", () => {
    const first = decideLease(heldByOther, undefined, 'me', 15, 1_000, now);
    const renewed = { ...heldByOther, renewTime: '2026-12-01T23:00:09.000000Z' };
    const after = decideLease(renewed, first.observation, 'me', 15, 14_000, now);
    assert.equal(after.write, false);
    assert.equal(after.observation.atMs, 14_000);
    assert.equal(decideLease(renewed, after.observation, 'me', 15, 28_999, now).write, false);
    assert.equal(decideLease(renewed, after.observation, 'me', 15, 29_000, now).write, true);
  });

  it("waits the holder's own leaseDurationSeconds, not this replica's", () => {
    const short = { ...heldByOther, leaseDurationSeconds: 1 };
    const first = decideLease(short, undefined, 'me', 15, 0, now);
    assert.equal(decideLease(short, first.observation, 'me', 15, 999, now).write, false);
    assert.equal(decideLease(short, first.observation, 'me', 15, 1_000, now).write, true);
  });

  it('renews its own Lease keeping acquireTime and transitions', () => {
    const mine = { ...heldByOther, holderIdentity: 'me' };
    const decision = decideLease(mine, undefined, 'me', 15, 0, now);
    assert.deepEqual(decision.write && decision.spec, {
      holderIdentity: 'me',
      leaseDurationSeconds: 15,
      acquireTime: heldByOther.acquireTime,
      renewTime: stamp,
      leaseTransitions: 4,
    });
  });

  it('takes a released Lease (no holder) at once', () => {
    const released = releasedLease(heldByOther, now);
    assert.deepEqual(released, { ...heldByOther, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: stamp, renewTime: stamp });
    const decision = decideLease(released, undefined, 'me', 15, 0, now);
    assert.equal(decision.write && decision.spec.leaseTransitions, 5);
  });
});

describe('microTime', () => {
  it('is metav1.MicroTime as the API server writes it: six fractional digits, UTC', () => {
    assert.equal(microTime(new Date('2026-01-02T03:04:05.006Z')), '2026-01-02T03:04:05.006000Z');
    assert.match(microTime(new Date(0)), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });
});
