/**
 * One review delays all the others: with ten valid 3 MiB reviews in flight, an ordinary review
 * waited 7.6–10.9 s, past the webhooks' timeoutSeconds (5 s), because every review was decided on
 * the one thread that also reads every request. Now a body over 64 KiB is handed to the review
 * pool (src/server/review-pool.ts) and the main thread keeps deciding the small ones.
 *
 * Here the offload is a stand-in that holds every large review until the test lets it go, so the
 * assertions are about order and counts: which reviews were handed over, which were answered
 * while the others were still held. How long a small review waits with real large ones in flight
 * is measured in `npm run bench` ("Starvation"), and by test/faults/one-review-starves-none.slow.test.ts
 * against a served process.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest, type Server } from 'node:http';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { emptyClusterFacts } from '../../src/admission/cluster-facts.js';
import { AdmissionError } from '../../src/admission/errors.js';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import type { ReviewAnswer, ReviewRunner } from '../../src/admission/run-review.js';
import { createApp, reviewTimeoutMs } from '../../src/http/app.js';
import { createMetrics, type Metrics } from '../../src/http/metrics.js';
import { smallBodyBytes } from '../../src/http/transport-limits.js';
import { startReviewPool } from '../../src/server/review-pool.js';
import { emptyPolicySet } from '../../src/tenancy/policy-set.js';
import { loadReviewFixture, pipelineFromArgs, silentLogger } from '../support/harness.js';

interface Held {
  readonly side: string;
  readonly bytes: number;
  readonly deadline: number;
  readonly answer: (result: ReviewAnswer | Error) => void;
}

/** An offload that keeps every review it is given until the test answers it. */
function holdingOffload(): ReviewRunner & { readonly held: Held[] } {
  const held: Held[] = [];
  return {
    held,
    review: (side, body, deadline) =>
      new Promise<ReviewAnswer>((resolve, reject) => {
        held.push({
          side,
          bytes: body.length,
          deadline,
          answer: (result) => {
            if (result instanceof Error) reject(result);
            else resolve(result);
          },
        });
      }),
  };
}

/** A valid tenant pod review of about `bytes`, grown by an annotation. */
function reviewOf(bytes: number): string {
  const review = loadReviewFixture('burstable-create-no-tolerations').review;
  const metadata = review.request.object?.metadata as Record<string, unknown>;
  metadata.annotations = { 'example.com/pad': 'p'.repeat(Math.max(0, bytes - JSON.stringify(review).length - 40)) };
  return JSON.stringify(review);
}

function post(port: number, path: string, body: string): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`never: ${what}`);
}

const answered = (payload: string): ReviewAnswer => ({
  payload,
  summary: {
    uid: 'u',
    kind: 'Pod',
    namespace: 'default',
    name: 'p',
    operation: 'CREATE',
    dryRun: false,
    decision: 'allowed',
    plugins: [],
    deniedBy: undefined,
    patchOperations: 0,
  },
});

describe('one review delays all the others: large reviews are decided off the main thread', () => {
  const offload = holdingOffload();
  let metrics: Metrics;
  let server: Server;
  let port = 0;
  let clock = 0;
  before(async () => {
    metrics = createMetrics({ collectProcessMetrics: false });
    server = createServer(
      createApp({
        pipeline: pipelineFromArgs([]),
        logger: silentLogger,
        metrics,
        readiness: { check: () => ({ ready: true, reasons: [] }) },
        now: () => clock,
        offload,
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    port = typeof address === 'object' && address !== null ? address.port : 0;
  });
  after(async () => {
    for (const held of offload.held.splice(0)) held.answer(new Error('test over'));
    await new Promise((resolve) => server.close(resolve));
  });

  it('a small review is answered while ten large ones are still being decided', async () => {
    const large = reviewOf(3 * 1024 * 1024);
    const answers = Array.from({ length: 10 }, () => post(port, '/validate', large));
    await until(() => offload.held.length === 10, 'ten large reviews handed over');
    assert.ok(offload.held.every((held) => held.bytes === Buffer.byteLength(large)));

    const small = await post(port, '/mutate', reviewOf(2_000));
    assert.equal(small.status, 200);
    assert.equal((JSON.parse(small.text) as { response: { allowed: boolean } }).response.allowed, true);
    assert.equal(offload.held.length, 10, 'the small review was never handed over');

    for (const [i, held] of offload.held.splice(0).entries()) held.answer(answered(`{"large":${i}}`));
    const statuses = (await Promise.all(answers)).map((answer) => answer.status);
    assert.deepEqual(
      statuses,
      Array.from({ length: 10 }, () => 200),
    );
  });

  it(`a body up to ${smallBodyBytes / 1024} KiB is decided on this thread, one byte more goes to the pool`, async () => {
    const atLimit = reviewOf(smallBodyBytes);
    const body = atLimit.length > smallBodyBytes ? reviewOf(smallBodyBytes - (atLimit.length - smallBodyBytes)) : atLimit;
    assert.ok(Buffer.byteLength(body) <= smallBodyBytes);
    assert.equal((await post(port, '/mutate', body)).status, 200);
    assert.equal(offload.held.length, 0);
    const over = `${body} `.padEnd(smallBodyBytes + 1, ' ');
    const pending = post(port, '/mutate', over);
    await until(() => offload.held.length === 1, 'the larger body handed over');
    offload.held.splice(0)[0]?.answer(answered('{}'));
    assert.equal((await pending).status, 200);
  });

  it('a large review gets the API server’s own deadline: its ?timeout=, else 10 s, at most 30 s', async () => {
    assert.equal(reviewTimeoutMs('/validate?timeout=5s'), 5_000);
    assert.equal(reviewTimeoutMs('/validate?timeout=1m0s'), 30_000, 'capped at timeoutSeconds’ maximum');
    assert.equal(reviewTimeoutMs('/validate'), 10_000, 'admissionregistration/v1’s default timeoutSeconds');
    assert.equal(reviewTimeoutMs('/validate?timeout=soon'), 10_000);
    clock = 1_000;
    const pending = post(port, '/validate?timeout=5s', reviewOf(100_000));
    await until(() => offload.held.length === 1, 'handed over');
    assert.equal(offload.held[0]?.deadline, 6_000, 'the time the request arrived, plus its timeout');
    offload.held.splice(0)[0]?.answer(answered('{}'));
    await pending;
  });

  it('a review past its deadline is answered 500, counted as undecided, and says why', async () => {
    const undecidedBefore = (await metrics.undecidedReviews.get()).values[0]?.value ?? 0;
    const pending = post(port, '/validate', reviewOf(100_000));
    await until(() => offload.held.length === 1, 'handed over');
    offload.held
      .splice(0)[0]
      ?.answer(new AdmissionError('CouldNotDecide', "the review was not decided within its deadline (the API server's timeout)"));
    const answer = await pending;
    assert.equal(answer.status, 500);
    const status = JSON.parse(answer.text) as { code: number; reason: string; message: string };
    assert.equal(status.reason, 'InternalError');
    assert.match(status.message, /not decided within its deadline/);
    assert.equal((await metrics.undecidedReviews.get()).values[0]?.value, undecidedBefore + 1);
  });
});

describe('a small review is never queued behind large ones', () => {
  it(`a review of up to ${smallBodyBytes / 1024} KiB is answered on the main thread while every review worker is busy and large reviews wait`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'small-review-'));
    const settings = readAdmissionSettings(parseFlags([], admissionFlags));
    const pool = await startReviewPool({
      workers: 2,
      heapMib: 64,
      settings,
      clusterFacts: emptyClusterFacts,
      policies: () => emptyPolicySet,
      gates: () => settings.gates,
      logger: silentLogger,
      now: () => performance.now(),
      workerUrl: new URL('../support/held-review-worker.ts', import.meta.url),
    });
    const server = createServer(
      createApp({
        pipeline: pipelineFromArgs([]),
        logger: silentLogger,
        metrics: createMetrics({ collectProcessMetrics: false }),
        readiness: { check: () => ({ ready: true, reasons: [] }) },
        now: () => performance.now(),
        offload: pool,
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    // Large bodies the stand-in worker holds until released (test/support/held-review-worker.ts).
    const held = (name: string, namespace: string): string =>
      JSON.stringify({ namespace, hold: join(dir, name), padding: 'x'.repeat(3 * 1024 * 1024) });
    const release = (name: string): void => {
      writeFileSync(join(dir, `${name}.release`), '');
    };
    try {
      const large = [post(port, '/validate', held('a0', 'tenant-a')), post(port, '/validate', held('b0', 'team-b'))];
      await until(() => existsSync(join(dir, 'a0.started')) && existsSync(join(dir, 'b0.started')), 'both workers deciding');
      large.push(post(port, '/validate', held('a1', 'tenant-a')));
      await until(() => pool.stats().queued === 1, 'a third large review waiting');

      const small = await post(port, '/validate', reviewOf(smallBodyBytes - 1_000));
      assert.equal(small.status, 200);
      assert.equal((JSON.parse(small.text) as { response: { allowed: boolean } }).response.allowed, true);
      assert.deepEqual(
        { busy: pool.stats().busy, queued: pool.stats().queued },
        { busy: 2, queued: 1 },
        'answered while every worker was busy and a large review still waited: never queued',
      );
      for (const name of ['a0', 'b0', 'a1']) release(name);
      assert.deepEqual(
        (await Promise.all(large)).map((answer) => answer.status),
        [200, 200, 200],
      );
    } finally {
      for (const name of ['a0', 'b0', 'a1']) release(name);
      await new Promise((resolve) => server.close(resolve));
      await pool.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
