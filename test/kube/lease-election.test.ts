/**
 * The audit Lease's election loop (src/kube/lease-election.ts) against the fake API server, with
 * client-go's timings scaled down by five (lease 3 s, renew deadline 2 s, retry 400 ms; a machine
 * shared by many test processes stalls timers by hundreds of milliseconds): one leader
 * among three, a hand-over on stop() that does not wait out the lease, and a leader that stops
 * leading renewDeadline after its last successful write when the API server refuses.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createApiRequest } from '../../src/kube/api-requests.js';
import { createLeaseElection, defaultLeaseTiming, type LeaseElection } from '../../src/kube/lease-election.js';
import { FakeApiServer } from '../support/fake-api-server.js';

const timing = { leaseDurationSeconds: 3, renewDeadlineMs: 2_000, retryPeriodMs: 400, jitterFactor: 1.2 };
const quiet = { info: () => undefined, warn: () => undefined };

async function until(what: string, condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe('the audit Lease election against an API server', () => {
  let fake: FakeApiServer;
  before(async () => {
    fake = await FakeApiServer.start();
  });
  after(async () => {
    await fake.close();
  });

  it("uses client-go's leaderelection defaults: 15 s lease, 10 s renew deadline, 2 s retry, jitter 1.2", () => {
    assert.deepEqual(defaultLeaseTiming, { leaseDurationSeconds: 15, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, jitterFactor: 1.2 });
  });

  it('elects one of three; stop() gives the Lease up and another takes it within a few retries', async () => {
    const request = createApiRequest(fake.kubeConfig());
    const leading = new Map<string, number>();
    const events: string[] = [];
    const elections: LeaseElection[] = ['a', 'b', 'c'].map((identity) =>
      createLeaseElection({
        request,
        namespace: 'tolerator-system',
        name: 'one-of-three',
        identity,
        timing,
        logger: quiet,
        onStartedLeading: () => {
          leading.set(identity, (leading.get(identity) ?? 0) + 1);
          events.push(`+${identity}`);
        },
        onStoppedLeading: () => {
          events.push(`-${identity}`);
        },
      }),
    );
    for (const election of elections) election.start();
    try {
      await until('a leader', () => elections.some((election) => election.isLeader()));
      // Two lease durations later, still exactly one, and the same one.
      await sleep(6_000);
      const leaders = elections.filter((election) => election.isLeader());
      assert.equal(leaders.length, 1);
      const first = leaders[0]!;
      assert.deepEqual(events, [`+${first.identity}`]);
      const stored = fake.leases.get('tolerator-system/one-of-three');
      assert.equal((stored?.spec as { holderIdentity: string }).holderIdentity, first.identity);

      const stoppedAt = Date.now();
      await first.stop();
      assert.equal(first.isLeader(), false);
      assert.equal((fake.leases.get('tolerator-system/one-of-three')?.spec as { holderIdentity: string }).holderIdentity, '');
      await until('another leader', () => elections.some((election) => election.isLeader()));
      // Released: taken at the others' next try (400 to 880 ms), before the 3 s lease would expire.
      assert.ok(Date.now() - stoppedAt < 3_000, `${Date.now() - stoppedAt} ms to hand over`);
      const second = elections.find((election) => election.isLeader())!;
      assert.notEqual(second, first);
      assert.equal((fake.leases.get('tolerator-system/one-of-three')?.spec as { leaseTransitions: number }).leaseTransitions, 1);
      await sleep(1_000);
      assert.equal(elections.filter((election) => election.isLeader()).length, 1);
    } finally {
      for (const election of elections) await election.stop();
    }
  });

  it('a leader whose renewals are refused stops leading renewDeadline after its last write, before the lease expires for the others', async () => {
    const request = createApiRequest(fake.kubeConfig());
    let stoppedAt = 0;
    const election = createLeaseElection({
      request,
      namespace: 'tolerator-system',
      name: 'refused',
      identity: 'solo',
      timing,
      logger: quiet,
      onStartedLeading: () => undefined,
      onStoppedLeading: () => {
        stoppedAt = Date.now();
      },
    });
    election.start();
    try {
      await until('leading', () => election.isLeader());
      await sleep(1_000);
      const refusedFrom = Date.now();
      fake.failLeases(500);
      await until('not leading', () => !election.isLeader(), 5_000);
      // The last successful renewal was at most one retry (400 to 880 ms) before the refusals began;
      // the leadership ends renewDeadline after it: before the 3 s a follower waits, with room for
      // a late timer on a loaded machine.
      const after = stoppedAt - refusedFrom;
      assert.ok(after <= timing.renewDeadlineMs + 500, `stopped ${after} ms after the refusals began`);
      assert.ok(after >= timing.renewDeadlineMs - 900, `stopped only ${after} ms after the refusals began`);
      fake.failLeases(undefined);
      await until('leading again', () => election.isLeader());
    } finally {
      fake.failLeases(undefined);
      await election.stop();
    }
  });

  it('two replicas creating the Lease at once: the API server answers one 409, and only the other leads', async () => {
    const request = createApiRequest(fake.kubeConfig());
    const pair = ['x', 'y'].map((identity) =>
      createLeaseElection({
        request,
        namespace: 'tolerator-system',
        name: 'race',
        identity,
        timing,
        logger: quiet,
        onStartedLeading: () => undefined,
        onStoppedLeading: () => undefined,
      }),
    );
    for (const election of pair) election.start();
    try {
      await until('a leader', () => pair.some((election) => election.isLeader()));
      await sleep(2_000);
      assert.equal(pair.filter((election) => election.isLeader()).length, 1);
      const creates = fake.leaseRequests.filter((entry) => entry.method === 'POST' && entry.path.endsWith('/leases'));
      assert.ok(creates.length >= 1);
    } finally {
      for (const election of pair) await election.stop();
    }
  });
});
