/**
 * Answer amplification (issue 28, finding 3): a tenant's 3 MiB dryRun pod of 149,796
 * `{"matchFields":[{}]}` node selector terms got a 23.3 MB answer, since DedicatedNodes ANDs the
 * group's requirement into every term and the patch re-sends them all. kube-apiserver decodes and
 * applies the patch and copies it into its audit log. The patch is never more than
 * maxPatchBytes(body) (src/admission/run-review.ts): beyond, the review is denied with the reason.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { maxPatchBytes } from '../../src/admission/run-review.js';
import { answerReview } from '../../src/admission/answer-review.js';
import { loadReviewFixture, pipelineFromArgs } from '../support/harness.js';

const pipeline = pipelineFromArgs(['--policies=policies', '--cluster-state=test/fixtures/config/tenancy-cluster.yaml']);

function tenantPodWithTerms(count: number, term: (i: number) => unknown): Buffer {
  const review = structuredClone(loadReviewFixture('tenant-pod-create').review) as unknown as {
    request: { object: { spec: Record<string, unknown> }; dryRun?: boolean };
  };
  review.request.dryRun = true;
  review.request.object.spec.affinity = {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: Array.from({ length: count }, (_, i) => term(i)) },
    },
  };
  return Buffer.from(JSON.stringify(review));
}

interface Answer {
  response: { allowed: boolean; patch?: string; status?: { code: number; message: string } };
}

describe('answer amplification: the patch is at most a small multiple of the review', () => {
  it('answer amplification: a 3 MiB pod of 149,796 {"matchFields":[{}]} terms is denied with the reason, in a short answer', async () => {
    const body = tenantPodWithTerms(149_796, () => ({ matchFields: [{}] }));
    assert.ok(body.length > 3_000_000 && body.length < 3.2e6, `a body of ${body.length} bytes`);
    const { payload, summary } = await answerReview('mutate', body, pipeline);
    assert.ok(payload.length <= 64 * 1024, `an answer of ${payload.length} bytes`);
    const { response } = JSON.parse(payload) as Answer;
    assert.equal(response.allowed, false);
    assert.equal(response.patch, undefined);
    assert.equal(response.status?.code, 403);
    assert.match(
      response.status.message,
      /the patch would be \d+ bytes, more than the \d+ this review allows \(64 KiB and twice its \d+ bytes\)/,
    );
    assert.equal(summary.decision, 'denied');
  });

  it('answer amplification: a tenant pod with a thousand ordinary terms is still patched, within the bound', async () => {
    const body = tenantPodWithTerms(1_000, (i) => ({
      matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: [`zone-${i}`] }],
    }));
    const { payload } = await answerReview('mutate', body, pipeline);
    const { response } = JSON.parse(payload) as Answer;
    assert.equal(response.allowed, true);
    const patch = Buffer.from(response.patch ?? '', 'base64');
    assert.ok(patch.length > body.length / 2, 'the group requirement was ANDed into every term');
    assert.ok(patch.length <= maxPatchBytes(body.length), `${patch.length} of ${body.length}`);
  });
});
