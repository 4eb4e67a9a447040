/**
 * Runs one potentially slow, synchronous piece of the webhook in a worker thread, so that a test
 * can give it a deadline and terminate it: work that blocks the event loop cannot be timed out
 * from the thread it blocks. Posts `{ ready: true }` once loaded, then `{ ms }` when done.
 *
 * Scenarios (workerData):
 * - `policy`: a TenancyPolicy whose `exempt` holds the costliest shape cel.ts accepts (single
 *   comprehensions over a list the request controls), evaluated on a pod with `n` tolerations.
 * - `review`: a Burstable pod with `n` distinct tolerations through the default mutating pipeline
 *   (PodTolerationRestriction merges its tolerations).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseAdmissionReview } from '../../src/admission/review.js';
import { createPolicyEvaluator, createPolicySet } from '../../src/tenancy/policy-set.js';
import { compilePolicy, labelPolicySpec, namespace } from '../tenancy/tenancy-fixtures.js';
import { loadReviewFixture, pipelineFromArgs } from './harness.js';

export interface StallScenario {
  readonly scenario: 'policy' | 'review';
  readonly n: number;
}

/** The costliest shape cel.ts accepts: one comprehension over a list the request controls. */
export const linearExempt = "object.spec.tolerations.all(a, a.key != 'x') && object.spec.tolerations.exists(b, b.key == 'a')";

async function run({ scenario, n }: StallScenario): Promise<number> {
  if (scenario === 'policy') {
    const policy = compilePolicy('quadratic', { ...labelPolicySpec(), exempt: linearExempt });
    const { set } = createPolicySet([policy]);
    const tolerations = Array.from({ length: n }, () => ({ key: 'a' }));
    const evaluator = createPolicyEvaluator({
      object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { tolerations } },
      oldObject: undefined,
      namespace: namespace('ml', { dedicated: 'gpu' }),
      request: {},
    });
    const started = performance.now();
    evaluator.exempt(set.policies[0]!);
    return performance.now() - started;
  }
  const review = loadReviewFixture('burstable-create-defaults-present').review;
  (review.request.object as { spec: { tolerations: unknown[] } }).spec.tolerations = Array.from({ length: n }, (_, i) => ({
    key: `example.com/k${i}`,
    operator: 'Exists',
  }));
  const text = JSON.stringify(review);
  const pipeline = pipelineFromArgs([]);
  const started = performance.now();
  await pipeline.review(parseAdmissionReview(text), ['mutate']);
  return performance.now() - started;
}

if (parentPort !== null) {
  const port = parentPort;
  // Every module is loaded by now: the caller's deadline starts here, not at thread start-up.
  port.postMessage({ ready: true });
  void run(workerData as StallScenario).then((ms) => {
    port.postMessage({ ms });
  });
}
