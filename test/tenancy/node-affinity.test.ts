import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeSelectorRequirement, NodeSelectorTerm, PodSpec } from '../../src/api/types.js';
import { groupContradictions, missingGroupRequirement, requireGroupInEveryTerm } from '../../src/tenancy/node-affinity.js';

const requirement = { key: 'dedicated', operator: 'In', values: ['gpu'] };

function withRequired(terms: NodeSelectorTerm[], extra: Partial<PodSpec> = {}): PodSpec {
  return {
    containers: [{ name: 'app' }],
    ...extra,
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
  };
}

function requiredTerms(spec: PodSpec): NodeSelectorTerm[] | undefined {
  return spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
}

describe('requireGroupInEveryTerm', () => {
  const rows: { name: string; given: PodSpec; want: NodeSelectorTerm[] }[] = [
    {
      name: 'a spec with no affinity gets one term holding just the requirement',
      given: { containers: [{ name: 'app' }] },
      want: [{ matchExpressions: [requirement] }],
    },
    {
      name: 'an empty list of required terms gets one term holding just the requirement',
      given: withRequired([]),
      want: [{ matchExpressions: [requirement] }],
    },
    {
      name: 'two ORed terms each get the requirement ANDed in',
      given: withRequired([
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
      ]),
      want: [
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }, requirement] },
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }, requirement] },
      ],
    },
    {
      name: "a DaemonSet pod's matchFields term keeps its field and gains the requirement",
      given: withRequired([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }]),
      want: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }], matchExpressions: [requirement] }],
    },
    {
      name: 'a term already holding the requirement stays as it is while another gains it',
      given: withRequired([{ matchExpressions: [requirement] }, { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }]),
      want: [{ matchExpressions: [requirement] }, { matchExpressions: [{ key: 'zone', operator: 'Exists' }, requirement] }],
    },
    {
      name: 'a term that matches no node (no expressions, no fields) stays empty',
      given: withRequired([{}, { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }]),
      want: [{}, { matchExpressions: [{ key: 'zone', operator: 'Exists' }, requirement] }],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const given = structuredClone(row.given);
      const got = requireGroupInEveryTerm(given, 'dedicated', 'gpu');
      assert.deepEqual(requiredTerms(got), row.want);
      assert.deepEqual(given, row.given, 'the input is never modified');
    });
  }

  it('returns the very same spec when every term already holds the requirement', () => {
    const given = withRequired([{ matchExpressions: [requirement] }]);
    assert.equal(requireGroupInEveryTerm(given, 'dedicated', 'gpu'), given);
  });

  it('keeps preferred terms, other affinity kinds and untouched terms as the same objects', () => {
    const preferred = [{ weight: 10, preference: { matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] } }];
    const podAffinity = { requiredDuringSchedulingIgnoredDuringExecution: [] };
    const held: NodeSelectorTerm = { matchExpressions: [requirement] };
    const containers = [{ name: 'app' }];
    const given: PodSpec = {
      containers,
      affinity: {
        podAffinity,
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: preferred,
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [held, { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }],
          },
        },
      },
    };
    const got = requireGroupInEveryTerm(given, 'dedicated', 'gpu');
    assert.equal(got.containers, containers);
    assert.equal(got.affinity?.podAffinity, podAffinity);
    assert.equal(got.affinity.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution, preferred);
    assert.equal(requiredTerms(got)?.[0], held);
    assert.notEqual(requiredTerms(got)?.[1], requiredTerms(given)?.[1]);
  });
});

describe('groupContradictions', () => {
  const rows: { name: string; given: PodSpec; want: string[] }[] = [
    { name: 'a spec with no constraints contradicts nothing', given: {}, want: [] },
    { name: 'a nodeSelector for the same group contradicts nothing', given: { nodeSelector: { dedicated: 'gpu' } }, want: [] },
    { name: 'a nodeSelector for another group contradicts', given: { nodeSelector: { dedicated: 'team-b' } }, want: ['spec.nodeSelector'] },
    {
      name: 'an In term without the group contradicts',
      given: withRequired([{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['team-b'] }] }]),
      want: ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]'],
    },
    {
      name: 'an In term listing the group among others contradicts nothing',
      given: withRequired([{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['team-b', 'gpu'] }] }]),
      want: [],
    },
    {
      name: 'a NotIn term naming the group contradicts',
      given: withRequired([{ matchExpressions: [{ key: 'dedicated', operator: 'NotIn', values: ['gpu'] }] }]),
      want: ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]'],
    },
    {
      name: 'a DoesNotExist term on the label contradicts',
      given: withRequired([{ matchExpressions: [{ key: 'dedicated', operator: 'DoesNotExist' }] }]),
      want: ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]'],
    },
    {
      name: 'a Gt term on the label contradicts a group name that is not an integer',
      given: withRequired([{ matchExpressions: [{ key: 'dedicated', operator: 'Gt', values: ['1'] }] }]),
      want: ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]'],
    },
    {
      name: 'one contradicting term among fine ones is still reported',
      given: withRequired([
        { matchExpressions: [{ key: 'zone', operator: 'Exists' }] },
        { matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['team-b'] }] },
      ]),
      want: ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1].matchExpressions[0]'],
    },
    {
      name: 'expressions on other labels contradict nothing',
      given: withRequired([{ matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }]),
      want: [],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(
        groupContradictions(row.given, 'dedicated', 'gpu', 'spec').map(({ field }) => field),
        row.want,
      );
    });
  }

  const preferring = (...expressions: NodeSelectorRequirement[]): PodSpec => ({
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [requirement] }] },
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 1, preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] } },
          { weight: 100, preference: { matchExpressions: expressions } },
        ],
      },
    },
  });
  const preferredField = 'spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[1].preference.matchExpressions[0]';

  it("a preferred term for another group contradicts: Karpenter takes the heaviest preference as required, and In [other] with the group's In [G] reads as DoesNotExist, which a general NodePool satisfies", () => {
    for (const excluding of [
      { key: 'dedicated', operator: 'In', values: ['pci'] },
      { key: 'dedicated', operator: 'NotIn', values: ['gpu'] },
      { key: 'dedicated', operator: 'DoesNotExist' },
    ]) {
      const contradictions = groupContradictions(preferring(excluding), 'dedicated', 'gpu', 'spec');
      assert.deepEqual(
        contradictions.map(({ field }) => field),
        [preferredField],
        excluding.operator,
      );
      assert.match(
        contradictions[0]?.detail ?? '',
        /excludes the namespace's group gpu \(a preference Karpenter would provision for outside the group\)$/,
      );
    }
  });

  it('a preferred term that admits the group, or names other labels only, contradicts nothing', () => {
    for (const admitting of [
      { key: 'dedicated', operator: 'In', values: ['pci', 'gpu'] },
      { key: 'dedicated', operator: 'Exists' },
      { key: 'dedicated', operator: 'NotIn', values: ['pci'] },
      { key: 'disktype', operator: 'In', values: ['ssd'] },
    ]) {
      assert.deepEqual(groupContradictions(preferring(admitting), 'dedicated', 'gpu', 'spec'), [], admitting.operator);
    }
  });

  it('an empty required term contradicts, once however many there are: kube-scheduler matches no node with it, and Karpenter reads it as no constraint', () => {
    const terms = [{ matchExpressions: [{ key: 'zone', operator: 'Exists' }, requirement] }, {}, {}, {}];
    const contradictions = groupContradictions(withRequired(terms), 'dedicated', 'gpu', 'spec');
    assert.deepEqual(contradictions, [
      {
        field: 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1]',
        detail:
          'is empty (and 2 more terms): kube-scheduler matches no node with it, but Karpenter reads it as no constraint and would provision for the pod outside the group',
      },
    ]);
    // A term of matchFields only is no empty term (Karpenter refuses such a pod outright).
    const fields = withRequired([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n'] }] }]);
    assert.deepEqual(groupContradictions(fields, 'dedicated', 'gpu', 'spec'), []);
  });

  it('pins a Gt bound against an integer group name numerically', () => {
    const spec = withRequired([{ matchExpressions: [{ key: 'dedicated', operator: 'Gt', values: ['9'] }] }]);
    assert.deepEqual(groupContradictions(spec, 'dedicated', '10', 'spec'), []);
    assert.equal(groupContradictions(spec, 'dedicated', '9', 'spec').length, 1);
  });

  it('reads a Gt bound of 3 million digits without converting it: no int64 has that many', () => {
    // A 3 MiB pod can hold such a bound; BigInt took half a second to read it, per policy and side.
    const spec = withRequired([{ matchExpressions: [{ key: 'dedicated', operator: 'Gt', values: [`000${'9'.repeat(3_000_000)}`] }] }]);
    const started = process.cpuUsage();
    assert.equal(groupContradictions(spec, 'dedicated', '10', 'spec').length, 1);
    const used = process.cpuUsage(started);
    // About 15 ms; 150 ms leaves room for a slow, busy machine.
    assert.ok(used.user + used.system < 150_000, `${((used.user + used.system) / 1000).toFixed(0)} ms`);
  });
});

describe('missingGroupRequirement', () => {
  const rows: { name: string; given: PodSpec; want: string[] }[] = [
    {
      name: 'no required affinity is reported at the affinity itself',
      given: {},
      want: ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution'],
    },
    {
      name: 'every term without the requirement is reported by index',
      given: withRequired([{ matchExpressions: [requirement] }, { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }]),
      want: ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1]'],
    },
    {
      name: 'a term requiring the group value twice counts as holding it',
      given: withRequired([{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['gpu', 'gpu'] }] }]),
      want: [],
    },
    {
      name: 'a term allowing the group and another one does not hold the requirement',
      given: withRequired([{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['gpu', 'team-b'] }] }]),
      want: ['spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]'],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(missingGroupRequirement(row.given, 'dedicated', 'gpu', 'spec'), row.want);
    });
  }
});
