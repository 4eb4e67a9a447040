/**
 * A review worker answers exactly as the main thread does: every golden review
 * (test/fixtures/reviews), decided once by src/admission/answer-review.ts on this thread and once by the real
 * worker (src/server/review-worker.ts) through the pool, with the same flags, cluster state and
 * policies, gives the same bytes and the same summary. Without this, whether a review is decided
 * on the main thread or in a worker (its size) could change the decision.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { emptyClusterFacts } from '../../src/admission/cluster-facts.js';
import { AdmissionError } from '../../src/admission/errors.js';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { pipelineFor } from '../../src/admission/pipeline-settings.js';
import { startTenancy } from '../../src/server/tenancy-policies.js';
import { answerReview } from '../../src/admission/answer-review.js';
import { loadClusterStateFile } from '../../src/kube/cluster-state-file.js';
import { startReviewPool, type ReviewPool } from '../../src/server/review-pool.js';
import { loadReviewFixtures, silentLogger } from '../support/harness.js';

type Outcome = { payload: string; summary: unknown } | { code: string; message: string } | { undecided: true };

async function outcome(run: () => Promise<{ payload: string; summary: unknown }>): Promise<Outcome> {
  try {
    const { payload, summary } = await run();
    return { payload, summary };
  } catch (error) {
    return error instanceof AdmissionError ? { code: error.code, message: error.message } : { undecided: true };
  }
}

describe('a review worker answers every golden review exactly as the main thread does', { timeout: 300_000 }, () => {
  const pools: ReviewPool[] = [];
  after(async () => {
    await Promise.all(pools.map((pool) => pool.close()));
  });
  const byArgs = new Map<string, ReturnType<typeof loadReviewFixtures>>();
  for (const fixture of loadReviewFixtures()) {
    const key = JSON.stringify(fixture.args);
    byArgs.set(key, [...(byArgs.get(key) ?? []), fixture]);
  }

  for (const [key, fixtures] of byArgs) {
    it(`${fixtures.length} review(s) with ${key}`, async () => {
      const args = JSON.parse(key) as string[];
      const settings = readAdmissionSettings(parseFlags(args, admissionFlags));
      const facts =
        settings.clusterStateFile === undefined ? emptyClusterFacts : loadClusterStateFile(settings.clusterStateFile, silentLogger);
      const tenancy = startTenancy(settings.policiesDir, silentLogger, undefined, false);
      const pipeline = pipelineFor(settings, facts, tenancy.current);
      const pool = await startReviewPool({
        workers: 1,
        heapMib: 160,
        settings,
        clusterFacts: facts,
        policies: tenancy.current,
        gates: () => settings.gates,
        logger: silentLogger,
        now: () => performance.now(),
      });
      pools.push(pool);
      for (const fixture of fixtures) {
        const body = JSON.stringify(fixture.review);
        const here = await outcome(() => answerReview(fixture.webhook, Buffer.from(body), pipeline));
        const there = await outcome(() => pool.review(fixture.webhook, Buffer.from(body), performance.now() + 60_000));
        assert.deepEqual(there, here, fixture.name);
      }
    });
  }
});

describe("a review worker decides with the server's version, as the main thread does", { timeout: 120_000 }, () => {
  // A pod UPDATE adding a Gt toleration with the gate off: the error found twice upstream, listed
  // twice in the causes through 1.36 and once from 1.37 (src/plugins/toleration-validation.ts).
  const pod = (tolerations: unknown[]): unknown => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'nginx' }], tolerations },
  });
  const exists = { key: 'k', operator: 'Exists' };
  const review = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'f2b7c1de-0000-4000-8000-000000000137',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      name: 'web',
      namespace: 'default',
      operation: 'UPDATE',
      userInfo: { username: 'admin' },
      object: pod([exists, { key: 'g', operator: 'Gt', value: '5', effect: 'NoSchedule' }]),
      oldObject: pod([exists]),
    },
  });
  for (const [minor, causes] of [
    [36, 2],
    [37, 1],
  ] as const) {
    it(`1.${minor}: ${causes} cause(s), on both threads`, async () => {
      const settings = readAdmissionSettings(parseFlags([], admissionFlags));
      const tenancy = startTenancy(undefined, silentLogger, undefined, false);
      const serverVersion = () => ({ major: 1, minor });
      const pipeline = pipelineFor(settings, emptyClusterFacts, tenancy.current, () => settings.gates, serverVersion);
      const pool = await startReviewPool({
        workers: 1,
        heapMib: 160,
        settings,
        clusterFacts: emptyClusterFacts,
        policies: tenancy.current,
        gates: () => settings.gates,
        serverVersion,
        logger: silentLogger,
        now: () => performance.now(),
      });
      try {
        const here = await outcome(() => answerReview('validate', Buffer.from(review), pipeline));
        const there = await outcome(() => pool.review('validate', Buffer.from(review), performance.now() + 60_000));
        assert.deepEqual(there, here);
        assert.ok('payload' in here);
        const answer = JSON.parse(here.payload) as { response: { status: { details: { causes: unknown[] } } } };
        assert.equal(answer.response.status.details.causes.length, causes);
      } finally {
        await pool.close();
      }
    });
  }
});
