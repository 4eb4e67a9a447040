import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventIntent } from '../../src/events/event-intents.js';
import { BoundedQueue, EventThrottle, eventLimits, ReportedFindings, type Offer } from '../../src/events/event-throttle.js';

function denial(name: string, namespace = 'team-a'): EventIntent {
  return {
    regarding: { apiVersion: 'apps/v1', kind: 'Deployment', namespace, name },
    type: 'Warning',
    reason: 'PolicyViolation',
    action: 'Denied',
    note: `${name} denied`,
    reportingController: 'tolerator.dev/admission',
  };
}

const minute = 60_000;

function throttle(): EventThrottle {
  let n = 0;
  return new EventThrottle(eventLimits, (name) => `${name}.${(n++).toString(16)}`);
}

describe('the per-object token bucket (client-go tools/record spam filter: burst 25, one per 5 minutes)', () => {
  it('the spam filter lets 25 new Events of one object through at once, then one per 5 minutes', () => {
    const t = throttle();
    const kinds: Offer['kind'][] = [];
    // Each offer more than the series window after the last, so that each is a new Event, not a repeat.
    let at = 0;
    for (let i = 0; i < 30; i++) {
      kinds.push(t.offer(denial('web'), 'admission', 'team-a', at).kind);
      at += eventLimits.seriesWindowMs;
    }
    // 30 offers 6 minutes apart refill 30 × 6/5 tokens: none is throttled.
    assert.deepEqual(new Set(kinds), new Set(['create']));

    const burst = throttle();
    const made: Offer['kind'][] = [];
    for (let i = 0; i < 30; i++) {
      // The same object, its series forgotten at once (a create that failed), at the same instant.
      const offer = burst.offer(denial('web'), 'admission', 'team-a', 0);
      made.push(offer.kind);
      if (offer.kind === 'create') burst.forget(offer.entry);
    }
    assert.equal(made.filter((kind) => kind === 'create').length, 25);
    assert.equal(made.filter((kind) => kind === 'throttled').length, 5);
    // 5 minutes later, one token more.
    const later = burst.offer(denial('web'), 'admission', 'team-a', 5 * minute);
    assert.ok(later.kind === 'create');
    burst.forget(later.entry);
    assert.equal(burst.offer(denial('web'), 'admission', 'team-a', 5 * minute).kind, 'throttled');
  });
});

describe('series (client-go tools/events: a repeat within 6 minutes is counted, not written again)', () => {
  it('an Event repeated 100 times within the window is one create, one series write at the first repeat, and one when it finishes', () => {
    const t = throttle();
    const kinds = Array.from({ length: 100 }, (_, i) => t.offer(denial('web'), 'admission', 'team-a', i * 1000).kind);
    assert.equal(kinds[0], 'create');
    assert.equal(kinds[1], 'series');
    assert.deepEqual(new Set(kinds.slice(2)), new Set(['counted']));
    assert.deepEqual(t.due(100 * 1000), [], 'still growing and written less than 30 minutes ago');
    const finished = t.due(99 * 1000 + eventLimits.seriesWindowMs);
    assert.equal(finished.length, 1);
    assert.equal(finished[0]?.count, 100);
    assert.equal(t.size.series, 0, 'a finished series is forgotten');
    assert.equal(t.offer(denial('web'), 'admission', 'team-a', 200 * minute).kind, 'create');
  });

  it('a series that ends and is followed by a new Event before it was written still has its last count written', () => {
    const t = throttle();
    for (let i = 0; i < 5; i++) t.offer(denial('web'), 'admission', 'team-a', i * 1000);
    assert.equal(t.offer(denial('web'), 'admission', 'team-a', 4000 + eventLimits.seriesWindowMs).kind, 'create');
    const due = t.due(4000 + eventLimits.seriesWindowMs);
    assert.deepEqual(
      due.map((entry) => entry.count),
      [5],
    );
  });

  it('a series that keeps growing is written every 30 minutes', () => {
    const t = throttle();
    for (let at = 0; at <= 31 * minute; at += minute) t.offer(denial('web'), 'admission', 'team-a', at);
    const due = t.due(31 * minute);
    assert.equal(due.length, 1);
    assert.equal(due[0]?.count, 32);
  });
});

describe('the bound on memory and on writes, whatever a tenant does', () => {
  it('a tenant with 4n denied Deployments holds no more memory than one with n: buckets and series stay at 4,096 keys', () => {
    const sizes = [5_000, 20_000].map((n) => {
      const t = throttle();
      for (let i = 0; i < n; i++) t.offer(denial(`web-${i}`), 'admission', 'team-a', i);
      return t.size;
    });
    assert.deepEqual(sizes, [
      { buckets: eventLimits.keys, series: eventLimits.keys },
      { buckets: eventLimits.keys, series: eventLimits.keys },
    ]);
  });

  it('the queue takes at most its capacity, and at most its share of one namespace, and refuses rather than waits', () => {
    const queue = new BoundedQueue<number>(1000, 100);
    let taken = 0;
    for (let i = 0; i < 10_000; i++) if (queue.push('team-a', i)) taken += 1;
    assert.equal(taken, 100, 'one namespace fills its share, not the queue');
    for (let ns = 0; ns < 20; ns++) for (let i = 0; i < 100; i++) queue.push(`ns-${ns}`, i);
    assert.equal(queue.size, 1000);
    assert.equal(queue.push('other', 1), false);
    assert.equal(queue.shift(), 0);
    assert.equal(queue.push('other', 1), true, 'room again once one is taken');
    let drained = 0;
    while (queue.shift() !== undefined) drained += 1;
    assert.equal(drained, 1000);
    assert.equal(queue.push('team-a', 1), true, "a namespace's share comes back as its items leave");
  });
});

describe('audit findings are reported once, not every interval', () => {
  const findings = ['a', 'b', 'c'];
  it('a finding reported in one run is not reported again in the next while it stands', () => {
    const memory = new ReportedFindings(10);
    const reported: string[] = [];
    const report = (finding: string): boolean => {
      reported.push(finding);
      return true;
    };
    assert.equal(
      memory.run(findings, (f) => f, report),
      3,
    );
    assert.equal(
      memory.run(findings, (f) => f, report),
      0,
    );
    assert.deepEqual(reported, ['a', 'b', 'c']);
    // b fixed, then back: reported anew.
    memory.run(['a', 'c'], (f) => f, report);
    assert.equal(
      memory.run(findings, (f) => f, report),
      1,
    );
    assert.deepEqual(reported, ['a', 'b', 'c', 'b']);
  });

  it('a finding the writer did not take (queue full) is tried again at the next run', () => {
    const memory = new ReportedFindings(10);
    assert.equal(
      memory.run(
        findings,
        (f) => f,
        (f) => f !== 'b',
      ),
      2,
    );
    const again: string[] = [];
    memory.run(
      findings,
      (f) => f,
      (f) => again.push(f) > 0,
    );
    assert.deepEqual(again, ['b']);
  });

  it('remembers at most its capacity, at 4n findings as at n', () => {
    for (const n of [10_000, 40_000]) {
      const memory = new ReportedFindings(4096);
      memory.run(
        Array.from({ length: n }, (_, i) => String(i)),
        (f) => f,
        () => true,
      );
      assert.equal(memory.size, 4096);
    }
  });
});
