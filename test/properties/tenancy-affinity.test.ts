/**
 * DedicatedNodes over generated pods: after the mutating pipeline, a pod created in a namespace of
 * group G carries the group toleration and the requirement `dedicated In [G]` in every required
 * node-selector term that selects anything (docs/kubernetes-rules.md#node-affinity-matching:
 * required terms are ORed, so a single term without it would let the pod escape the group).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import jsonpatch from 'fast-json-patch';
import type { ClusterFacts } from '../../src/admission/cluster-facts.js';
import { createPipeline } from '../../src/admission/pipeline.js';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, NodeSelectorTerm, Toleration } from '../../src/api/types.js';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import { allPluginNames, buildPlugins } from '../../src/plugins/registry.js';
import { createPolicySet } from '../../src/tenancy/policy-set.js';
import { compilePolicy, namespace } from '../tenancy/tenancy-fixtures.js';
import { parsedReview, requestArbitrary } from '../support/pod-arbitraries.js';

const group = 'gpu';
const { set } = createPolicySet([compilePolicy('by-label')]);
const namespaces = { ml: namespace('ml', { dedicated: group }), web: namespace('web') };
const facts: ClusterFacts = {
  getNamespace: (name) => Promise.resolve(namespaces[name as keyof typeof namespaces]),
  getNode: () => undefined,
  readNode: () => Promise.resolve(undefined),
  listNodes: () => [],
  knowsNodes: false,
  readRuntimeClass: () => Promise.resolve(undefined),
  listRuntimeClasses: () => [],
  isSynced: () => true,
  stop: () => Promise.resolve(),
};
const pipeline = createPipeline({
  ...buildPlugins({
    enabled: allPluginNames,
    defaultTolerationSeconds: {},
    podTolerationRestriction: {},
    dedicatedNodes: createDedicatedNodes(() => set),
  }),
  gates: defaultFeatureGates,
  clusterFacts: facts,
});

const requirement = fc.record({
  key: fc.constantFrom('topology.kubernetes.io/zone', 'kubernetes.io/os', 'dedicated'),
  operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist'),
  values: fc.array(fc.constantFrom('a', 'b', 'linux', group, 'other'), { minLength: 1, maxLength: 2 }),
});
const term: fc.Arbitrary<NodeSelectorTerm> = fc.record(
  {
    matchExpressions: fc.array(requirement, { maxLength: 3 }),
    matchFields: fc.constant([{ key: 'metadata.name', operator: 'In', values: ['node-1'] }]),
  },
  { requiredKeys: [] },
);
const affinity = fc.option(
  fc.record(
    {
      requiredDuringSchedulingIgnoredDuringExecution: fc.record({ nodeSelectorTerms: fc.array(term, { maxLength: 3 }) }),
      preferredDuringSchedulingIgnoredDuringExecution: fc.constant([
        { weight: 10, preference: { matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] } },
      ]),
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);
const nodeSelector = fc.option(fc.constantFrom({ 'kubernetes.io/os': 'linux' }, { dedicated: group }, { dedicated: 'other' }), {
  nil: undefined,
});

const tenantPod = fc.tuple(requestArbitrary, affinity, nodeSelector).map(([request, nodeAffinity, selector]) => {
  const object = structuredClone(request.object);
  const spec = object.spec as Record<string, unknown>;
  if (nodeAffinity !== undefined) spec.affinity = { nodeAffinity };
  if (selector !== undefined) spec.nodeSelector = selector;
  return { operation: 'CREATE' as const, object, oldObject: undefined };
});

function termsOf(pod: JsonObject): NodeSelectorTerm[] {
  const spec = pod.spec as {
    affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] } } };
  };
  return spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
}

function holdsGroup(t: NodeSelectorTerm): boolean {
  return (t.matchExpressions ?? []).some(
    (r) => r.key === 'dedicated' && r.operator === 'In' && (r.values ?? []).length > 0 && (r.values ?? []).every((v) => v === group),
  );
}

describe('DedicatedNodes over generated tenant pods', () => {
  it('puts the group requirement in every required node-selector term, and the group toleration, after mutation', async () => {
    let mutated = 0;
    await fc.assert(
      fc.asyncProperty(tenantPod, async (request) => {
        const parsed = parsedReview(request, 'ml');
        const { decision } = await pipeline.review(parsed, ['mutate']);
        fc.pre(decision.allowed);
        const patched = jsonpatch.applyPatch(
          structuredClone(parsed.attributes.object as JsonObject),
          structuredClone(decision.patch ?? []) as jsonpatch.Operation[],
          true,
          true,
        ).newDocument;
        const terms = termsOf(patched);
        assert.ok(terms.length > 0, 'a required affinity exists');
        for (const [index, t] of terms.entries()) {
          const selectsSomething = (t.matchExpressions ?? []).length > 0 || (t.matchFields ?? []).length > 0;
          assert.ok(!selectsSomething || holdsGroup(t), `term ${index} holds dedicated In [${group}]: ${JSON.stringify(t)}`);
        }
        const tolerations = (patched.spec as { tolerations?: Toleration[] }).tolerations ?? [];
        assert.ok(
          tolerations.some((t) => t.key === 'dedicated' && t.operator === 'Equal' && t.value === group && t.effect === 'NoSchedule'),
          'the group toleration',
        );
        mutated++;
      }),
      { numRuns: 300, seed: 0xded1ca7e },
    );
    assert.ok(mutated > 100, `enough allowed pods were checked (${mutated})`);
  });

  it('gives a pod in a namespace of no group neither the toleration nor the requirement', async () => {
    await fc.assert(
      fc.asyncProperty(tenantPod, async (request) => {
        const parsed = parsedReview(request, 'web');
        const { decision } = await pipeline.review(parsed, ['mutate']);
        const original = parsed.attributes.object as JsonObject;
        const patched = jsonpatch.applyPatch(
          structuredClone(original),
          structuredClone(decision.patch ?? []) as jsonpatch.Operation[],
          true,
          true,
        ).newDocument;
        assert.deepEqual(termsOf(patched), termsOf(original), 'no required term changed');
        const groupTolerations = (pod: JsonObject): number =>
          ((pod.spec as { tolerations?: Toleration[] | null }).tolerations ?? []).filter((t) => t.value === group).length;
        assert.ok(groupTolerations(patched) <= groupTolerations(original), 'no group toleration added');
      }),
      { numRuns: 200, seed: 0xded1ca7f },
    );
  });
});
