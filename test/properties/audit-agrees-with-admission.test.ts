/**
 * The audit agrees with admission: a pod that tolerator's webhooks let through today (the
 * mutating plugins, then the validating ones on the mutated object, on CREATE), stored as the API
 * server stores it and placed where the scheduler may place it, breaks no audit rule.
 *
 * Pods are generated (test/support/pod-arbitraries.ts: every mix of resources, tolerations valid
 * and not, DaemonSet owners, hostNetwork) into a tenant namespace, a namespace of no group, two
 * infrastructure namespaces and one with a PodNodeSelector node selector, with or without a
 * `nodeName` (a node of the group, another group's, an ungrouped one, or none by that name) and a
 * `nodeSelector`, under the shipped policies and PodNodeSelector, with the Gt/Lt gate off and on. A pod admission denies does not exist and is not audited. A pod without `nodeName` is bound
 * to the first node the scheduler's filters accept (src/scheduling/placement.ts), or stays pending.
 *
 * The client's `status.qosClass` is dropped before admission: the API server replaces the status of
 * a new pod (PrepareForCreate) and stores the QoS class it computes, which is what the audit reads.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { defaultFeatureGates, type FeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Pod } from '../../src/api/types.js';
import { auditPod, type AuditSettings } from '../../src/audit/audit-rules.js';
import { admitObject } from '../../src/admission/admit-object.js';
import { pipelineFor } from '../../src/admission/pipeline-settings.js';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { staticClusterFacts } from '../../src/kube/cluster-state-file.js';
import { allPluginNames } from '../../src/plugins/registry.js';
import { evaluatePlacements } from '../../src/scheduling/placement.js';
import { loadPolicyDirectory } from '../../src/tenancy/policy-directory.js';
import { computePodQOS } from '../../src/tolerations/qos.js';
import { auditNamespaces, auditNodes, policiesDir } from '../support/audit-fixtures.js';
import { podArbitrary } from '../support/pod-arbitraries.js';

const numRuns = 800;
const seed = 0xa0d17;

const policies = loadPolicyDirectory(policiesDir).set;
const facts = staticClusterFacts({ namespaces: auditNamespaces, nodes: auditNodes });

const caseArbitrary = fc.record({
  pod: podArbitrary,
  namespace: fc.constantFrom('tenant-a', 'shared', 'infra', 'monitoring', 'zoned'),
  nodeSelector: fc.constantFrom(undefined, { zone: 'east' }, { zone: 'west' }, { dedicated: 'a' }, { dedicated: 'b' }),
  // Mostly unbound (the scheduler then places the pod), else named directly, which admission judges.
  nodeName: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.constantFrom('node-a', 'node-b', 'plain', 'ghost') },
  ),
  gateOn: fc.boolean(),
});

function gatesOf(gateOn: boolean): FeatureGates {
  return { ...defaultFeatureGates, TaintTolerationComparisonOperators: gateOn };
}

const pipelines = new Map(
  [false, true].map((gateOn) => {
    const settings = readAdmissionSettings(
      parseFlags([`--feature-gates=TaintTolerationComparisonOperators=${gateOn}`, '--enable-plugins=PodNodeSelector'], admissionFlags),
    );
    return [gateOn, pipelineFor(settings, facts, () => policies)] as const;
  }),
);

describe('the audit agrees with admission', () => {
  it('a pod the webhooks let through breaks no audit rule', async () => {
    let audited = 0;
    let bound = 0;
    await fc.assert(
      fc.asyncProperty(caseArbitrary, async ({ pod, namespace, nodeName, nodeSelector, gateOn }) => {
        const gates = gatesOf(gateOn);
        const sent = structuredClone(pod);
        (sent.metadata as Record<string, unknown>).namespace = namespace;
        const spec = sent.spec as Record<string, unknown>;
        if (nodeName !== undefined) spec.nodeName = nodeName;
        if (nodeSelector !== undefined) spec.nodeSelector = nodeSelector;
        delete (sent as { status?: unknown }).status;
        const run = await admitObject(pipelines.get(gateOn)!, {
          object: sent,
          operation: 'CREATE',
          namespace,
          sides: ['mutate', 'validate'],
        });
        if (!run.allowed) return;
        const stored = structuredClone(run.object) as JsonObject & Pod;
        stored.status = { phase: 'Running', qosClass: computePodQOS(stored.spec ?? {}, gates) };
        if (stored.spec?.nodeName === undefined) {
          const placement = evaluatePlacements(stored, auditNodes, gates).find((candidate) => candidate.schedulable);
          if (placement !== undefined) stored.spec = { ...stored.spec, nodeName: placement.node };
        }
        const node = auditNodes.find((candidate) => candidate.metadata.name === stored.spec?.nodeName);
        if (node !== undefined) bound += 1;
        const settings: AuditSettings = {
          gates,
          enabled: new Set(allPluginNames),
          policies,
          exclusion: { names: new Set(), label: undefined },
          all: true,
        };
        const result = auditPod(
          stored,
          { namespace: auditNamespaces.find((ns) => ns.metadata.name === namespace), node, nodesKnown: true },
          settings,
        );
        audited += 1;
        assert.deepEqual(result.violations, [], `admitted in ${namespace}, stored as ${JSON.stringify(stored)}`);
      }),
      { numRuns, seed },
    );
    // The property says something only if many pods got through, and many of them onto a node
    // (most generated pods carry an invalid toleration, which admission refuses).
    assert.ok(audited >= 150, `${audited} of ${numRuns} pods admitted`);
    assert.ok(bound >= 75, `${bound} pods bound to a node`);
  });
});
