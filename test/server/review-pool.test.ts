/**
 * The review pool (src/server/review-pool.ts), with a stand-in worker whose reviews take as long
 * as the test says (test/support/held-review-worker.ts) and with the real one. Everything is
 * asserted through counts and outcomes (which review was answered how, how many workers were
 * started), never through how long something took.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { emptyClusterFacts, type ClusterFacts } from '../../src/admission/cluster-facts.js';
import { AdmissionError } from '../../src/admission/errors.js';
import type { Namespace, Node } from '../../src/api/types.js';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { loadPolicies } from '../../src/server/tenancy-policies.js';
import { fairnessKey, startReviewPool, type ReviewPool, type ReviewPoolOptions } from '../../src/server/review-pool.js';
import { reviewPeakEstimate } from '../../src/http/transport-limits.js';
import { emptyPolicySet, type PolicySet } from '../../src/tenancy/policy-set.js';
import { policySetFromSources } from '../../src/tenancy/policy-directory.js';
import { loadReviewFixture, silentLogger } from '../support/harness.js';

const heldWorker = new URL('../support/held-review-worker.ts', import.meta.url);
const settings = readAdmissionSettings(parseFlags([], admissionFlags));
const pools: ReviewPool[] = [];
after(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
});

async function pool(overrides: Partial<ReviewPoolOptions> = {}): Promise<ReviewPool> {
  const started = await startReviewPool({
    workers: 1,
    heapMib: 64,
    settings,
    clusterFacts: emptyClusterFacts,
    policies: () => emptyPolicySet,
    gates: () => settings.gates,
    logger: silentLogger,
    now: () => performance.now(),
    workerUrl: heldWorker,
    ...overrides,
  });
  pools.push(started);
  return started;
}

const command = (value: object): Buffer => Buffer.from(JSON.stringify(value));
/** How many reviews the stand-in worker that answered had received, this one included. */
const received = (answer: { payload: string }): number => (JSON.parse(answer.payload) as { received: number }).received;
const far = (): number => performance.now() + 60_000;

/** Waits until `check` holds, polling: for states the pool reaches asynchronously (a worker replaced). */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`never: ${what}`);
}

function couldNotDecide(pattern: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(error instanceof AdmissionError, `an AdmissionError, got ${String(error)}`);
    assert.equal(error.code, 'CouldNotDecide');
    assert.equal(error.httpStatus, 500);
    assert.match(error.message, pattern);
    return true;
  };
}

describe('the review pool: deadlines, a worker that dies, and what a worker decides with', { timeout: 120_000 }, () => {
  it('a review still waiting for a worker when its deadline passes is answered 500 and never reaches a worker', async () => {
    const reviews = await pool();
    const first = reviews.review('validate', command({ holdMs: 1_500 }), far());
    const second = reviews.review('validate', command({}), performance.now() + 100);
    await assert.rejects(second, couldNotDecide(/not decided within its deadline.*still waiting for a review worker/));
    assert.equal(reviews.stats().expired, 1);
    // The first one was decided; the stand-in counts every review it received: only that one.
    assert.equal(received(await first), 1);
    const third = await reviews.review('validate', command({}), far());
    assert.equal(received(third), 2, 'the expired review was never sent to the worker');
    assert.equal(reviews.stats().started, 1);
  });

  it("a caller's short timeout ends the worker: no more; the answer is abandoned and the worker goes on to the next review", async () => {
    const reviews = await pool();
    const late = reviews.review('validate', command({ holdMs: 600 }), performance.now() + 100);
    await assert.rejects(late, couldNotDecide(/not decided within its deadline/));
    assert.equal(reviews.stats().expired, 1);
    // The worker finishes the abandoned review, then decides the next one: the same worker.
    const next = await reviews.review('validate', command({}), far());
    assert.equal(received(next), 2, 'the worker that decided the late review decided this one');
    assert.equal(reviews.stats().started, 1, 'no worker was ended or started for a short timeout');
    assert.equal(reviews.stats().ended, 0);
  });

  it('a review still running stuckMs past its deadline ends its worker, which is replaced', async () => {
    const reviews = await pool({ stuckMs: 200 });
    const stuck = reviews.review('validate', command({ holdMs: 30_000 }), performance.now() + 100);
    await assert.rejects(stuck, couldNotDecide(/not decided within its deadline/));
    await until(() => reviews.stats().started === 2 && reviews.stats().ready === 1, 'a second worker ready');
    assert.equal(reviews.stats().ended, 1);
    const next = await reviews.review('validate', command({}), far());
    assert.equal(received(next), 1, 'a new worker answered it');
  });

  it('a review that needs more heap than a worker has is answered 500, the process lives on, and the worker is replaced', async () => {
    const reviews = await pool({ heapMib: 32 });
    await assert.rejects(reviews.review('validate', command({ allocate: true }), far()), couldNotDecide(/more than the 32 MiB heap/));
    await until(() => reviews.stats().started === 2 && reviews.stats().ready === 1, 'a second worker ready');
    assert.equal(received(await reviews.review('validate', command({}), far())), 1);
  });

  it('a review whose plugins throw in the worker is undecided: a plain error, for the 500 and the log', async () => {
    const reviews = await pool();
    await assert.rejects(reviews.review('validate', command({ throw: 'boom' }), far()), (error: unknown) => {
      assert.ok(error instanceof Error && !(error instanceof AdmissionError));
      assert.match(error.message, /review worker: boom/);
      return true;
    });
  });

  it('queued reviews are answered in order, one at a time per worker, by as many workers as it has', async () => {
    const reviews = await pool({ workers: 2 });
    const answers = await Promise.all(Array.from({ length: 6 }, () => reviews.review('validate', command({ holdMs: 50 }), far())));
    const threads = new Set(answers.map((answer) => (JSON.parse(answer.payload) as { threadId: number }).threadId));
    assert.equal(threads.size, 2, 'both workers decided');
    assert.equal(reviews.stats().started, 2);
    assert.equal(reviews.stats().queued, 0);
  });

  it("large reviews starve each other: no more; another namespace's review waits only for the review being decided", async () => {
    const reviews = await pool();
    const order: string[] = [];
    const track = (label: string, body: object): Promise<void> =>
      reviews.review('validate', command(body), far()).then(() => {
        order.push(label);
      });
    // One tenant keeps six large reviews in flight (a 3 MiB pod's body, held 150 ms each)…
    const large = { namespace: 'tenant-a', holdMs: 150, padding: 'x'.repeat(3 * 1024 * 1024) };
    const tenant = Array.from({ length: 6 }, (_, i) => track(`tenant-a ${i}`, large));
    // …then another team's ordinary review of 120 KB arrives.
    const other = track('team-b', { namespace: 'team-b', padding: 'y'.repeat(120_000) });
    await Promise.all([...tenant, other]);
    assert.deepEqual(order.slice(0, 2), ['tenant-a 0', 'team-b'], `answered in the order ${order.join(', ')}`);
  });

  it("a small review never waits behind large ones: neither two tenants' queues nor a lane that was quiet", async () => {
    const reviews = await pool();
    const order: string[] = [];
    const track = (label: string, namespace: string, bytes: number): Promise<void> =>
      reviews.review('validate', command({ namespace, holdMs: 100, padding: 'x'.repeat(bytes) }), far()).then(() => {
        order.push(label);
      });
    const first = [0, 1, 2].flatMap((i) => [track(`a${i}`, 'tenant-a', 3_000_000), track(`c${i}`, 'tenant-c', 3_000_000)]);
    const small = track('b', 'team-b', 100_000);
    await Promise.all([...first, small]);
    assert.equal(order[1], 'b', `answered in the order ${order.join(', ')}`);
    // Between the two tenants, their reviews alternate: neither lane takes the worker twice in a row.
    const large = order.filter((label) => label !== 'b');
    for (let i = 1; i < large.length; i++) assert.notEqual(large[i]?.[0], large[i - 1]?.[0], `alternating: ${large.join(', ')}`);
  });

  it('the fair queue\'s lane is the request\'s namespace, read from the raw body (its first "namespace" field)', () => {
    assert.equal(
      fairnessKey(command({ request: { uid: 'u', name: 'n', namespace: 'team-b', object: { metadata: { namespace: 'x' } } } })),
      'team-b',
    );
    assert.equal(fairnessKey(command({ request: { uid: 'u', name: '"namespace":"forged"' } })), '', 'quotes inside a string are escaped');
    assert.equal(fairnessKey(command({ request: { namespace: 'n'.repeat(64) } })), '', 'longer than a namespace can be');
    assert.equal(fairnessKey(command({ request: { name: 'x'.repeat(70_000), namespace: 'late' } })), '', 'only the first 64 KiB is read');
  });

  it('close answers what still waits with 500', async () => {
    const reviews = await pool();
    const held = reviews.review('validate', command({ holdMs: 500 }), far());
    const waiting = assert.rejects(reviews.review('validate', command({}), far()), couldNotDecide(/shutting down/));
    await reviews.close();
    await waiting;
    await held.catch(() => undefined);
  });
});

/**
 * Reviews the stand-in worker holds until the test lets them go (`{ "hold": path }`): which are
 * being decided at once is read from the files the worker writes, so nothing depends on time.
 */
function latches(): {
  body: (name: string, namespace: string, bytes: number) => Buffer;
  started: (name: string) => boolean;
  threadOf: (name: string) => number;
  release: (name: string) => void;
  releaseAll: () => void;
} {
  const dir = mkdtempSync(join(tmpdir(), 'review-pool-'));
  const names = new Set<string>();
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const path = (name: string): string => join(dir, name);
  const release = (name: string): void => {
    writeFileSync(`${path(name)}.release`, '');
  };
  return {
    body: (name, namespace, bytes) => {
      names.add(name);
      return command({ namespace, hold: path(name), padding: 'x'.repeat(bytes) });
    },
    started: (name) => existsSync(`${path(name)}.started`),
    threadOf: (name) => Number(readFileSync(`${path(name)}.started`, 'utf8')),
    release,
    releaseAll: () => {
      for (const name of names) release(name);
    },
  };
}

const threadOf = (answer: { payload: string }): number => (JSON.parse(answer.payload) as { threadId: number }).threadId;
const threeMiB = 3 * 1024 * 1024;

describe('several review workers: concurrency, the fair share, and one worker lost at a time', { timeout: 120_000 }, () => {
  it('two large reviews of different namespaces are decided at once, by two workers', async () => {
    const reviews = await pool({ workers: 2 });
    const latch = latches();
    const a = reviews.review('validate', latch.body('a', 'tenant-a', threeMiB), far());
    const b = reviews.review('validate', latch.body('b', 'team-b', threeMiB), far());
    try {
      await until(() => latch.started('a') && latch.started('b'), 'both reviews being decided');
      assert.equal(reviews.stats().busy, 2);
      assert.equal(reviews.stats().queued, 0);
      assert.notEqual(latch.threadOf('a'), latch.threadOf('b'), 'each on a worker of its own');
    } finally {
      latch.releaseAll();
    }
    const [answerA, answerB] = await Promise.all([a, b]);
    assert.equal(threadOf(answerA), latch.threadOf('a'));
    assert.equal(threadOf(answerB), latch.threadOf('b'));
  });

  it('one namespace holds no more than half the workers (rounded up) while another namespace waits', async () => {
    const reviews = await pool({ workers: 2 });
    const latch = latches();
    try {
      // Nobody else waits: the tenant may use both workers.
      const a0 = reviews.review('validate', latch.body('a0', 'tenant-a', threeMiB), far());
      const a1 = reviews.review('validate', latch.body('a1', 'tenant-a', threeMiB), far());
      await until(() => latch.started('a0') && latch.started('a1'), 'the tenant on both workers');
      // Another team's review, then one more of the tenant's, smaller: the fair queue alone would
      // give the next free worker to the tenant (its emptied lane starts again at the virtual
      // time, as the other team's does, and the smaller body goes first between equals).
      const b0 = reviews.review('validate', latch.body('b0', 'team-b', threeMiB + 1_000), far());
      const a2 = reviews.review('validate', latch.body('a2', 'tenant-a', threeMiB), far());
      await until(() => reviews.stats().queued === 2, 'both waiting');
      latch.release('a0');
      await a0;
      await until(() => latch.started('b0') || latch.started('a2'), 'the free worker given a review');
      assert.equal(reviews.stats().queued, 1);
      assert.ok(latch.started('b0'), "the other team's review took the free worker");
      assert.ok(!latch.started('a2'), "the tenant's third review waits: it holds one of two workers while team-b waits");
      latch.releaseAll();
      await Promise.all([a1, b0, a2]);
    } finally {
      latch.releaseAll();
    }
  });

  it("a review is started beside another only if the memory both may build fits the workers' share; a smaller one then goes beside it", async () => {
    // 100 MiB for the reviews at once: a 2 MiB body is estimated at 88 MiB, a 120 KB one at 5.0.
    assert.equal(reviewPeakEstimate(2 * 1024 * 1024), 88 * 1024 * 1024);
    const reviews = await pool({ workers: 2, reviewMemoryBytes: 100 * 1024 * 1024 });
    const latch = latches();
    try {
      const a0 = reviews.review('validate', latch.body('a0', 'tenant-a', 2 * 1024 * 1024), far());
      await until(() => latch.started('a0'), 'the first large review being decided');
      const b0 = reviews.review('validate', latch.body('b0', 'team-b', 2 * 1024 * 1024), far());
      await until(() => reviews.stats().queued === 1, 'the second waiting');
      // A worker is free, but 88 + 88 MiB do not fit in 100: the second waits for the first.
      assert.equal(reviews.stats().busy, 1);
      assert.ok(!latch.started('b0'));
      latch.release('a0');
      await a0;
      await until(() => latch.started('b0'), 'the second decided once the first is answered');
      // Beside it, a 120 KB review fits (88 + 5.0): it is decided at once, on the other worker.
      const c0 = reviews.review('validate', latch.body('c0', 'team-c', 120_000), far());
      await until(() => latch.started('c0'), 'the small one beside the large one');
      assert.equal(reviews.stats().busy, 2);
      assert.notEqual(latch.threadOf('c0'), latch.threadOf('b0'));
      latch.releaseAll();
      await Promise.all([b0, c0]);
    } finally {
      latch.releaseAll();
    }
  });

  it("a worker that dies or is ended is replaced alone: the other worker's review goes on", async () => {
    const reviews = await pool({ workers: 2, heapMib: 32, stuckMs: 200 });
    const latch = latches();
    try {
      const kept = reviews.review('validate', latch.body('kept', 'tenant-a', 1_000), far());
      await until(() => latch.started('kept'), 'one worker deciding a review');
      // The other worker runs out of heap: that review is answered 500 and only that worker replaced.
      await assert.rejects(
        reviews.review('validate', command({ namespace: 'team-b', allocate: true }), far()),
        couldNotDecide(/more than the 32 MiB heap/),
      );
      await until(() => reviews.stats().started === 3 && reviews.stats().ready === 2, 'the dead worker replaced');
      // Its replacement is ended for a review stuck past its deadline: replaced alone again.
      const stuck = reviews.review('validate', command({ namespace: 'team-b', holdMs: 30_000 }), performance.now() + 100);
      await assert.rejects(stuck, couldNotDecide(/not decided within its deadline/));
      await until(() => reviews.stats().started === 4 && reviews.stats().ready === 2, 'the ended worker replaced');
      assert.equal(reviews.stats().ended, 1);
      // Through both, the first worker kept its review: it answers it now, the first it received.
      assert.equal(reviews.stats().busy, 1);
      latch.release('kept');
      const answer = await kept;
      assert.equal(threadOf(answer), latch.threadOf('kept'));
      assert.equal(received(answer), 1);
    } finally {
      latch.releaseAll();
    }
  });
});

describe('the real review worker decides as the main thread does', { timeout: 120_000 }, () => {
  const fixture = loadReviewFixture('tenant-pod-create');
  const tenancyArgs = ['--policies=policies', '--cluster-state=test/fixtures/config/tenancy-cluster.yaml'];
  const tenancySettings = readAdmissionSettings(parseFlags(tenancyArgs, admissionFlags));
  const namespaceReads: string[] = [];
  const facts: ClusterFacts = {
    ...emptyClusterFacts,
    getNamespace: (name) => {
      namespaceReads.push(name);
      return Promise.resolve({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { dedicated: 'gpu' } } } as Namespace);
    },
    knowsNodes: true,
    listNodes: () => [] as Node[],
  };

  it('asks this thread for the Namespace, and decides with the policy set this thread has, sent as its files', async () => {
    let set: PolicySet = loadPolicies('policies');
    assert.ok(set.sources !== undefined && set.sources.length > 0, 'a loaded set keeps its files');
    const reviews = await startReviewPool({
      workers: 1,
      heapMib: 160,
      settings: tenancySettings,
      clusterFacts: facts,
      policies: () => set,
      gates: () => tenancySettings.gates,
      logger: silentLogger,
      now: () => performance.now(),
    });
    pools.push(reviews);
    const body = Buffer.from(JSON.stringify(fixture.review));
    const withPolicies = await reviews.review('mutate', body, far());
    assert.deepEqual(namespaceReads, [fixture.review.request.namespace], 'the worker asked for the request namespace');
    assert.ok(withPolicies.summary.plugins.includes('DedicatedNodes'), `DedicatedNodes acted: ${withPolicies.summary.plugins.join(', ')}`);
    // A reload on this thread: the next review in the worker decides with the new set.
    set = policySetFromSources([]).set;
    const withNone = await reviews.review('mutate', Buffer.from(JSON.stringify(fixture.review)), far());
    assert.ok(!withNone.summary.plugins.includes('DedicatedNodes'), 'without policies DedicatedNodes has nothing to do');
  });

  it('never decides without the policies: a set it cannot be sent is undecided, not decided without them', async () => {
    const loaded = loadPolicies('policies');
    const { sources: _dropped, ...withoutSources } = loaded;
    const reviews = await startReviewPool({
      workers: 1,
      heapMib: 160,
      settings: tenancySettings,
      clusterFacts: facts,
      policies: () => withoutSources,
      gates: () => tenancySettings.gates,
      logger: silentLogger,
      now: () => performance.now(),
    });
    pools.push(reviews);
    await assert.rejects(reviews.review('mutate', Buffer.from(JSON.stringify(fixture.review)), far()), /without its sources/);
  });
});
