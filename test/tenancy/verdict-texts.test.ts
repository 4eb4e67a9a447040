import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject } from '../../src/api/types.js';
import { auditPod, type AuditRuleName } from '../../src/audit/audit-rules.js';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import type { AdmissionAttributes, PluginContext } from '../../src/plugins/plugin.js';
import { allPluginNames } from '../../src/plugins/registry.js';
import { createPolicyEvaluator, resolveNamespaceGroups, type PolicySet } from '../../src/tenancy/policy-set.js';
import {
  foreignReachRule,
  foreignTolerationText,
  groupRequirementText,
  groupTaintPattern,
  groupTaintText,
  groupTolerationText,
  judgedMemberships,
} from '../../src/tenancy/verdict-texts.js';
import { compilePolicy, labelPolicySpec, namespace, node, pod } from './tenancy-fixtures.js';

const policy = compilePolicy('by-label');
const set: PolicySet = { policies: [policy] };
const ml = namespace('ml', { dedicated: 'gpu' });
const plain = node('plain-1');
const tolerated = 'the dedicated taint of group "b"';

/** The webhook's denial of `object` as a CREATE in namespace ml, and the audit's findings of the same pod stored, by rule. */
function bothVerdicts(object: JsonObject): { denial: string; findings: Map<AuditRuleName, string> } {
  const attributes: AdmissionAttributes = {
    operation: 'CREATE',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subResource: '',
    namespace: 'ml',
    name: 'app',
    object,
    oldObject: undefined,
    dryRun: false,
  };
  const context: PluginContext = { gates: defaultFeatureGates, namespace: ml, node: () => plain, nodesKnown: true, nodes: () => [plain] };
  const outcome = createDedicatedNodes(() => set).validate(object, attributes, context);
  const denial = outcome.denial?.reason === 'Forbidden' ? outcome.denial.message : '';
  const audit = auditPod(
    object,
    { namespace: ml, node: undefined, nodesKnown: true },
    {
      gates: defaultFeatureGates,
      enabled: new Set(allPluginNames),
      policies: set,
      exclusion: { names: new Set(), label: undefined },
      all: false,
    },
  );
  return { denial, findings: new Map((audit.violations ?? []).map((violation) => [violation.rule, violation.message])) };
}

describe('DedicatedNodes and the audit say the same of the same pod', () => {
  it('a toleration of another group: the toleration, the taint pattern and why only infrastructure may', () => {
    const object = pod({ tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'b', effect: 'NoSchedule' }] }, { namespace: 'ml' });
    const { denial, findings } = bothVerdicts(object);
    const finding = findings.get('foreign-toleration') ?? '';
    for (const part of [foreignTolerationText('spec', 0, tolerated), groupTaintPattern(policy), foreignReachRule('ml', 'gpu', false)]) {
      assert.ok(denial.includes(part), `denial has ${part}: ${denial}`);
      assert.ok(finding.includes(part), `finding has ${part}: ${finding}`);
    }
  });

  it("a tenant without its group's pair: the taint, the toleration it lacks and the requirement", () => {
    const { denial, findings } = bothVerdicts(pod({}, { namespace: 'ml' }));
    const finding = findings.get('missing-pair') ?? '';
    for (const part of [groupTaintText(policy, 'gpu'), groupTolerationText(policy, 'gpu'), groupRequirementText(policy, 'gpu')]) {
      assert.ok(denial.includes(part), `denial has ${part}: ${denial}`);
      assert.ok(finding.includes(part), `finding has ${part}: ${finding}`);
    }
  });
});

describe('a namespace the policies disagree on', () => {
  it('is judged as belonging to no group under every policy', () => {
    const other = compilePolicy('by-team', { ...labelPolicySpec(), group: "namespaceObject.metadata.?labels['team'].orValue('')" });
    const disputed = namespace('both', { dedicated: 'gpu', team: 'b' });
    const both: PolicySet = { policies: [policy, other] };
    const evaluator = createPolicyEvaluator({ object: pod(), oldObject: undefined, namespace: disputed, request: () => ({}) });
    const groups = resolveNamespaceGroups(both, evaluator);
    assert.ok(groups.conflict !== undefined);
    assert.deepEqual(judgedMemberships(both, groups), [
      { policy, group: '' },
      { policy: other, group: '' },
    ]);
    assert.match(
      foreignReachRule('both', '', true),
      /^namespace "both" is claimed by more than one group, so it is judged as belonging to none/,
    );
  });
});
