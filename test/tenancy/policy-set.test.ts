import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Namespace } from '../../src/api/types.js';
import {
  PolicyEvaluationError,
  conflictMessage,
  createPolicyEvaluator,
  createPolicySet,
  resolveNamespaceGroups,
} from '../../src/tenancy/policy-set.js';
import { compilePolicy, labelPolicySpec, namespace, pod } from './tenancy-fixtures.js';

const byLabel = compilePolicy('by-label');
const byPrefix = compilePolicy('by-prefix', {
  ...labelPolicySpec(),
  group: "namespaceObject.metadata.name.startsWith('team-') ? 'team-' + namespaceObject.metadata.name.split('-')[1] : ''",
  taint: { key: 'tenant', effect: 'NoSchedule' },
  nodeLabel: 'tenant',
});
const alsoByLabel = compilePolicy('also-by-label', {
  ...labelPolicySpec(),
  taint: { key: 'other', effect: 'NoExecute' },
  nodeLabel: 'other',
});

function evaluatorFor(ns: Namespace | undefined): ReturnType<typeof createPolicyEvaluator> {
  return createPolicyEvaluator({ object: pod(), oldObject: undefined, namespace: ns, request: { operation: 'CREATE' } });
}

describe('resolveNamespaceGroups', () => {
  const rows: { name: string; given: Namespace | undefined; want: { conflict: string[] | undefined; groups: string[] | undefined } }[] = [
    {
      name: 'a namespace in one policy group and none of the other is no conflict',
      given: namespace('ml', { dedicated: 'gpu' }),
      want: { conflict: undefined, groups: ['gpu', '', 'gpu'] },
    },
    {
      name: 'a namespace with no group anywhere is no conflict',
      given: namespace('web'),
      want: { conflict: undefined, groups: ['', '', ''] },
    },
    {
      name: 'two policies giving different groups are a conflict naming both',
      given: namespace('team-a-dev', { dedicated: 'gpu' }),
      want: { conflict: ['by-label=gpu', 'by-prefix=team-a', 'also-by-label=gpu'], groups: undefined },
    },
    { name: 'an unknown namespace has no group under any policy', given: undefined, want: { conflict: undefined, groups: ['', '', ''] } },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const got = resolveNamespaceGroups({ policies: [byLabel, byPrefix, alsoByLabel] }, evaluatorFor(row.given));
      assert.deepEqual(
        {
          conflict: got.conflict?.map(({ policy, group }) => `${policy.name}=${group}`),
          groups: got.memberships?.map(({ group }) => group),
        },
        row.want,
      );
    });
  }

  it('writes a conflict message naming every policy and group', () => {
    const got = resolveNamespaceGroups({ policies: [byLabel, byPrefix] }, evaluatorFor(namespace('team-a-dev', { dedicated: 'gpu' })));
    assert.equal(
      conflictMessage('team-a-dev', got.conflict ?? []),
      'namespace "team-a-dev" belongs to more than one dedicated-node group (policy "by-label" gives group "gpu", policy "by-prefix" gives group "team-a"); the TenancyPolicies must agree on at most one group per namespace',
    );
  });
});

describe('createPolicyEvaluator', () => {
  it('throws "could not decide" naming the policy and field when an expression fails', () => {
    const failing = compilePolicy('failing', { ...labelPolicySpec(), group: "namespaceObject.metadata.labels['dedicated']" });
    assert.throws(
      () => evaluatorFor(namespace('web')).group(failing),
      (error: unknown) =>
        error instanceof PolicyEvaluationError &&
        /^could not decide: policy "failing" \(failing\.yaml\) spec\.group: No such key: dedicated/.test(error.message),
    );
  });

  it('throws when the group cannot be a label value', () => {
    const spaced = compilePolicy('spaced', { ...labelPolicySpec(), group: "'has space'" });
    assert.throws(
      () => evaluatorFor(namespace('web')).group(spaced),
      (error: unknown) =>
        error instanceof PolicyEvaluationError && /gave "has space", which cannot be a label or toleration value/.test(error.message),
    );
  });

  it('does not evaluate infrastructure without a namespace object, so it cannot fail', () => {
    const strict = compilePolicy('strict', { ...labelPolicySpec(), infrastructure: "namespaceObject.metadata.labels['x'] == 'y'" });
    assert.equal(evaluatorFor(undefined).infrastructure(strict), false);
  });

  it('evaluates a policy without exempt as never exempt', () => {
    const spec = labelPolicySpec();
    delete spec.exempt;
    assert.equal(evaluatorFor(namespace('ml', { dedicated: 'gpu' })).exempt(compilePolicy('plain', spec)), false);
  });
});

describe('createPolicySet', () => {
  it('refuses a duplicate name, naming both files, and keeps the first', () => {
    const first = compilePolicy('same');
    const second = { ...compilePolicy('same'), file: 'other.yaml' };
    const got = createPolicySet([first, second]);
    assert.deepEqual(
      { kept: got.set.policies, errors: got.errors.map(({ file, message }) => `${file}: ${message}`) },
      { kept: [first], errors: ['other.yaml: duplicate policy name: already defined in same.yaml'] },
    );
  });
});

describe('groups shared across requests for the same Namespace object', () => {
  it('a group rule that reads only namespaceObject is worked out once per Namespace object', () => {
    const { set } = createPolicySet([byLabel]);
    const ml = namespace('ml', { dedicated: 'gpu' });
    const first = createPolicyEvaluator({ object: pod(), oldObject: undefined, namespace: ml, request: {} }, set.namespaceVerdicts);
    assert.equal(first.group(byLabel), 'gpu');
    // The cluster state hands out a new object when a namespace changes; changing this one in
    // place shows that the second request reused the first answer instead of evaluating again.
    (ml.metadata.labels as Record<string, string>).dedicated = 'tpu';
    const second = createPolicyEvaluator({ object: pod(), oldObject: undefined, namespace: ml, request: {} }, set.namespaceVerdicts);
    assert.equal(second.group(byLabel), 'gpu');
    const changed = createPolicyEvaluator(
      { object: pod(), oldObject: undefined, namespace: namespace('ml', { dedicated: 'tpu' }), request: {} },
      set.namespaceVerdicts,
    );
    assert.equal(changed.group(byLabel), 'tpu', 'a new Namespace object is evaluated afresh');
  });

  it('exempt and infrastructure rules that read only namespaceObject are worked out once per Namespace object too; one that reads the pod is not', () => {
    const byNamespaceLabels = compilePolicy('by-namespace', {
      ...labelPolicySpec(),
      exempt: "namespaceObject.metadata.?labels['exempt'].orValue('') == 'true'",
    });
    const byPodLabel = compilePolicy('by-pod', labelPolicySpec());
    const { set } = createPolicySet([byNamespaceLabels, byPodLabel]);
    const platform = namespace('platform', { exempt: 'true', 'tolerator.dev/node-infrastructure': 'true' });
    const evaluator = (labels: Record<string, string>) =>
      createPolicyEvaluator({ object: pod({}, { labels }), oldObject: undefined, namespace: platform, request: {} }, set.namespaceVerdicts);
    const first = evaluator({});
    assert.deepEqual(
      [first.exempt(byNamespaceLabels), first.infrastructure(byNamespaceLabels), first.exempt(byPodLabel)],
      [true, true, false],
    );
    // Changed in place: a rule evaluated again would see it; one reused would not.
    const labels = platform.metadata.labels as Record<string, string>;
    labels.exempt = 'false';
    labels['tolerator.dev/node-infrastructure'] = 'false';
    const second = evaluator({ 'tolerator.dev/exempt': 'true' });
    assert.deepEqual(
      [second.exempt(byNamespaceLabels), second.infrastructure(byNamespaceLabels), second.exempt(byPodLabel)],
      [true, true, true],
      'the namespace rules are reused, the pod rule is evaluated for this pod',
    );
  });

  it('a group rule that also reads the pod is evaluated for every request', () => {
    const byPodLabel = compilePolicy('by-pod', { ...labelPolicySpec(), group: "object.metadata.?labels['team'].orValue('')" });
    const { set } = createPolicySet([byPodLabel]);
    const ml = namespace('ml');
    const a = createPolicyEvaluator(
      { object: pod({}, { labels: { team: 'a' } }), oldObject: undefined, namespace: ml, request: {} },
      set.namespaceVerdicts,
    );
    const b = createPolicyEvaluator(
      { object: pod({}, { labels: { team: 'b' } }), oldObject: undefined, namespace: ml, request: {} },
      set.namespaceVerdicts,
    );
    assert.equal(a.group(byPodLabel), 'a');
    assert.equal(b.group(byPodLabel), 'b');
  });
});
