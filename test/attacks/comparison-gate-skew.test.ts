/**
 * Attack: groups named by numbers (`dedicated=2024`), and a tenant outside them who adds a `Gt`
 * toleration to a pod that already uses one. The API server's TaintTolerationComparisonOperators
 * gate is off, but its ratchet (allowTaintTolerationComparisonOperators in pkg/api/pod/util.go)
 * lets an UPDATE of such a pod add more `Gt`/`Lt` tolerations. kube-scheduler reads its own gate:
 * during an upgrade or a rollback, or with flags set apart, it has the gate on and matches
 * `{key: dedicated, operator: Gt, value: "0"}` against the taint `dedicated=2024:NoSchedule`, so
 * the pod, still pending, lands on group 2024's nodes.
 *
 * The validating webhook must refuse the UPDATE whatever the API server's gate, as the VAP twin
 * (policies/vap/dedicated-by-namespace-label.yaml) always did.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Toleration } from '../../src/api/types.js';
import { parseAdmissionReview } from '../../src/admission/review.js';
import { toleratesTaint } from '../../src/tolerations/matching.js';
import { loadReviewFixture, pipelineFromArgs } from '../support/harness.js';

const gtZero: Toleration = { key: 'dedicated', operator: 'Gt', value: '0', effect: 'NoSchedule' };

/** gt-ratchet-update (a pod of "shop" that already uses Gt, updated with the gate off) adding `dedicated Gt 0`. */
function ratchetedReview(): unknown {
  const review = structuredClone(loadReviewFixture('gt-ratchet-update').review) as unknown as {
    request: { namespace: string; object: { spec: { tolerations: Toleration[] } } };
  };
  assert.equal(review.request.namespace, 'shop');
  review.request.object.spec.tolerations.push(gtZero);
  return review;
}

describe('dedicated=2024: a ratcheted UPDATE adding {key: dedicated, operator: Gt, value: "0"} with the API server\'s gate off', () => {
  const args = ['--policies=policies', '--cluster-state=test/fixtures/config/numeric-groups-cluster.yaml'];

  it('reaches group 2024 under a kube-scheduler whose gate is on', () => {
    assert.equal(
      toleratesTaint(gtZero, { key: 'dedicated', value: '2024', effect: 'NoSchedule' }, { TaintTolerationComparisonOperators: true }),
      true,
    );
  });

  it("passes the API server's validation (the ratchet), so only the tenancy rule can refuse it", async () => {
    const pipeline = pipelineFromArgs([...args, '--disable-plugins=DedicatedNodes']);
    const { decision } = await pipeline.review(parseAdmissionReview(JSON.stringify(ratchetedReview())), ['validate']);
    assert.equal(decision.allowed, true);
  });

  it('is denied by the validating webhook, naming the toleration', async () => {
    const pipeline = pipelineFromArgs(args);
    const { decision } = await pipeline.review(parseAdmissionReview(JSON.stringify(ratchetedReview())), ['validate']);
    assert.equal(decision.allowed, false, 'a Gt toleration on the group key is judged with the gate kube-scheduler may have');
    assert.equal(decision.status?.code, 403);
    assert.match(decision.status.message, /spec\.tolerations\[4\] tolerates the dedicated taints of a numeric range of groups/);
  });
});
