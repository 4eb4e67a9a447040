/**
 * ExtendedResourceToleration against dedicated-node tenancy, as an attacker would try it: a tenant
 * cannot write a toleration for another group's taint, but it can *request a resource* named like
 * that taint's key and let the plugin write the toleration (`{key, Exists, NoSchedule}`, which
 * tolerates every group sharing the key). A request of 0 needs no capacity on the node (the
 * scheduler's NodeResourcesFit skips zero requests), so the toleration alone would carry the pod
 * onto another group's nodes. The validating side judges the final pod, tolerations added by
 * tolerator's own mutation included, and refuses it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClusterFacts } from '../../src/admission/cluster-facts.js';
import { createPipeline } from '../../src/admission/pipeline.js';
import { parseAdmissionReview } from '../../src/admission/review.js';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Namespace } from '../../src/api/types.js';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import { createExtendedResourceToleration } from '../../src/plugins/extended-resource-toleration.js';
import { createTolerationValidation } from '../../src/plugins/toleration-validation.js';
import { createPolicySet } from '../../src/tenancy/policy-set.js';
import { compilePolicy, labelPolicySpec, namespace } from '../tenancy/tenancy-fixtures.js';

/** Group nodes tainted `example.com/pool=<group>:NoSchedule`: a key an extended resource can be named. */
const policy = compilePolicy('by-pool', {
  ...labelPolicySpec(),
  group: "namespaceObject.metadata.?labels['example.com/pool'].orValue('')",
  taint: { key: 'example.com/pool', effect: 'NoSchedule' },
  nodeLabel: 'example.com/pool',
});
const { set } = createPolicySet([policy]);

const namespaces: Record<string, Namespace> = {
  web: namespace('web'),
  ml: namespace('ml', { 'example.com/pool': 'gpu' }),
  agents: namespace('agents', { 'tolerator.dev/node-infrastructure': 'true' }),
};

const facts: ClusterFacts = {
  getNamespace: (name) => Promise.resolve(namespaces[name]),
  getNode: () => undefined,
  readNode: () => Promise.resolve(undefined),
  listNodes: () => [],
  readRuntimeClass: () => Promise.resolve(undefined),
  listRuntimeClasses: () => [],
  knowsNodes: true,
  isSynced: () => true,
  stop: () => Promise.resolve(),
};

const dedicatedNodes = createDedicatedNodes(() => set);
const pipeline = createPipeline({
  mutating: [createExtendedResourceToleration(), dedicatedNodes],
  validating: [dedicatedNodes, createTolerationValidation()],
  gates: defaultFeatureGates,
  clusterFacts: facts,
});

function podRequesting(ns: string, resources: Record<string, string>): JsonObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'app', namespace: ns },
    spec: { containers: [{ name: 'app', image: 'app', resources: { requests: resources, limits: resources } }] },
  };
}

async function review(ns: string, object: JsonObject) {
  const parsed = parseAdmissionReview(
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u',
        kind: { group: '', version: 'v1', kind: 'Pod' },
        resource: { group: '', version: 'v1', resource: 'pods' },
        operation: 'CREATE',
        namespace: ns,
        name: 'app',
        object,
        userInfo: { username: 'tenant', groups: ['system:authenticated'] },
      },
    }),
  );
  return (await pipeline.review(parsed, ['mutate', 'validate'])).decision;
}

/** The refusal's status, failing the test when the review was allowed. */
function refusalOf(decision: Awaited<ReturnType<typeof review>>): { code: number; message: string } {
  assert.ok(!decision.allowed && decision.status !== undefined, 'expected a refusal');
  return decision.status;
}

describe('ExtendedResourceToleration cannot carry a tenant onto another group’s nodes', () => {
  it('tenancy escape by extended resource: a pod of no group requesting example.com/pool: 0 is refused, the added Exists toleration reaching every group', async () => {
    const decision = await review('web', podRequesting('web', { 'example.com/pool': '0' }));
    const status = refusalOf(decision);
    assert.equal(status.code, 403);
    assert.match(
      status.message,
      /spec\.tolerations\[0\] tolerates the dedicated taint of every group \(example\.com\/pool=<group>:NoSchedule, policy "by-pool"\)/,
    );
  });

  it("tenancy escape by extended resource: a group's own pod requesting its taint key is refused too (the Exists toleration tolerates the other groups' values)", async () => {
    const decision = await review('ml', podRequesting('ml', { 'example.com/pool': '0' }));
    assert.equal(refusalOf(decision).code, 403);
  });

  it('an infrastructure namespace may, as with any toleration of every group', async () => {
    const decision = await review('agents', podRequesting('agents', { 'example.com/pool': '0' }));
    assert.equal(decision.allowed, true);
  });

  it('an ordinary extended resource is not affected: a tenant gets its GPU toleration and its own group', async () => {
    const decision = await review('ml', podRequesting('ml', { 'nvidia.com/gpu': '1' }));
    assert.equal(decision.allowed, true);
    assert.ok(decision.patch !== undefined && decision.patch.length > 0);
    const added = JSON.stringify(decision.patch);
    assert.match(added, /"nvidia\.com\/gpu"/);
    assert.match(added, /"example\.com\/pool"/);
  });
});
