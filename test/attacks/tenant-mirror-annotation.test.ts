/**
 * Attack: a tenant writes the mirror-pod annotation on an ordinary pod and binds it by
 * `spec.nodeName` to another group's node. Neither webhook decides:
 *
 * - the validating (and mutating) webhook's matchCondition `exclude-mirror-pods` skips every pod
 *   carrying `kubernetes.io/config.mirror`, whoever sends it, so kube-apiserver never calls
 *   tolerator;
 * - DedicatedNodes skips it too (isMirrorPod in src/plugins/dedicated-nodes.ts), so even a call
 *   would be allowed.
 *
 * kube-apiserver accepts the pod from any user: ValidatePodSpecificAnnotations only requires
 * `spec.nodeName` when the annotation is set, and only the NodeRestriction admission plugin (for
 * node users) looks further; ValidatePodSpecificAnnotationUpdates merely forbids adding or removing
 * the annotation later. The kubelet does not run such a pod (HandlePodAdditions skips a mirror pod
 * without a static pod, and housekeeping deletes orphaned mirrors), so this is a bypass of the
 * nodeName rule at the API level, not code execution on the foreign node: the pod is recorded as
 * bound to group gpu's node, its requests count against that node in the scheduler's cache until
 * the kubelet deletes it, and with a node that is down or not registered yet it stays there.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { evaluate } from '@marcbachmann/cel-js';
import { parse } from 'yaml';
import { parseAdmissionReview } from '../../src/admission/review.js';
import { loadReviewFixture, pipelineFromArgs } from '../support/harness.js';

const tenant = { username: 'alice@example.com', uid: 'a1', groups: ['team-shop', 'system:authenticated'] };

/** The foreign-nodename fixture (a pod in "shop", no group, bound to gpu-1), sent by a tenant with the mirror annotation. */
function tenantMirrorReview(): { request: Record<string, unknown> & { object: { metadata: Record<string, unknown> } } } {
  const review = structuredClone(loadReviewFixture('foreign-nodename-create').review) as unknown as {
    request: Record<string, unknown> & { object: { metadata: Record<string, unknown>; spec: Record<string, unknown> } };
  };
  review.request.userInfo = tenant;
  review.request.object.metadata.annotations = { 'kubernetes.io/config.mirror': 'made-up' };
  assert.equal(review.request.object.spec.nodeName, 'gpu-1');
  return review;
}

describe("a tenant's pod with the mirror annotation, bound to another group's node", () => {
  it('is still sent to the validating webhook (the matchCondition skips only mirror pods that a node creates)', () => {
    const config = parse(readFileSync(new URL('../../deploy/base/validating-webhook.yaml', import.meta.url), 'utf8')) as {
      webhooks: { matchConditions?: { expression: string }[] }[];
    };
    const review = tenantMirrorReview();
    for (const hook of config.webhooks) {
      const called = (hook.matchConditions ?? []).every(
        ({ expression }) =>
          evaluate(expression, {
            request: { ...review.request, object: undefined, oldObject: undefined },
            object: review.request.object,
            oldObject: null,
          }) === true,
      );
      assert.equal(called, true, 'kube-apiserver skips the webhook for a mirror annotation that any user can write');
    }
  });

  it('is denied by the validating webhook like the same pod without the annotation', async () => {
    const pipeline = pipelineFromArgs(['--policies=policies', '--cluster-state=test/fixtures/config/tenancy-cluster.yaml']);
    const { decision } = await pipeline.review(parseAdmissionReview(JSON.stringify(tenantMirrorReview())), ['validate']);
    assert.equal(decision.allowed, false, 'DedicatedNodes does not judge a pod that claims to be a mirror pod');
  });
});
