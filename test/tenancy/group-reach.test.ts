import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Toleration } from '../../src/api/types.js';
import {
  foreignGroupsTolerated,
  missingNodeProblem,
  nodeGroups,
  nodeNameProblem,
  toleratesOwnGroup,
} from '../../src/tenancy/group-reach.js';
import { toleratesTaint } from '../../src/tolerations/matching.js';
import { compilePolicy, node } from './tenancy-fixtures.js';

// The policy of these tests: taint dedicated=<group>:NoSchedule, node label `dedicated`.
const policy = compilePolicy('by-label');
const gpuTaint = { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' };

describe('toleratesOwnGroup: ToleratesTaint for the group taint', () => {
  const rows: { name: string; toleration: Toleration; want: boolean }[] = [
    { name: 'the group toleration', toleration: { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' }, want: true },
    { name: 'no operator means Equal', toleration: { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }, want: true },
    { name: 'an empty effect covers every effect', toleration: { key: 'dedicated', operator: 'Equal', value: 'gpu' }, want: true },
    {
      name: 'another effect does not',
      toleration: { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoExecute' },
      want: false,
    },
    { name: 'an empty key with Exists tolerates every taint', toleration: { operator: 'Exists' }, want: true },
    { name: 'an empty key with Equal compares the value only', toleration: { operator: 'Equal', value: 'gpu' }, want: true },
    { name: 'Exists on the key', toleration: { key: 'dedicated', operator: 'Exists' }, want: true },
    { name: "another group's value", toleration: { key: 'dedicated', operator: 'Equal', value: 'web' }, want: false },
    { name: 'an empty value', toleration: { key: 'dedicated', operator: 'Equal' }, want: false },
    { name: 'another key', toleration: { key: 'other', operator: 'Exists' }, want: false },
    { name: 'a lower-case operator tolerates nothing', toleration: { key: 'dedicated', operator: 'exists' }, want: false },
    { name: 'Gt never counts as the group toleration', toleration: { key: 'dedicated', operator: 'Gt', value: '1' }, want: false },
  ];
  for (const { name, toleration, want } of rows) {
    it(name, () => {
      assert.equal(toleratesOwnGroup(toleration, gpuTaint), want);
    });
  }

  it('Gt does not count even for a group named by a larger integer', () => {
    assert.equal(toleratesOwnGroup({ key: 'dedicated', operator: 'Gt', value: '1' }, { ...gpuTaint, value: '5' }), false);
  });
});

describe('foreignGroupsTolerated', () => {
  const rows: { name: string; toleration: Toleration; ownGroup?: string; want: string | RegExp | undefined }[] = [
    {
      name: 'the own group is not foreign',
      toleration: { key: 'dedicated', operator: 'Equal', value: 'gpu' },
      ownGroup: 'gpu',
      want: undefined,
    },
    {
      name: 'another group is',
      toleration: { key: 'dedicated', operator: 'Equal', value: 'web' },
      ownGroup: 'gpu',
      want: 'the dedicated taint of group "web"',
    },
    { name: 'an empty value names no group', toleration: { key: 'dedicated', operator: 'Equal' }, want: undefined },
    {
      name: 'Exists reaches every group',
      toleration: { key: 'dedicated', operator: 'Exists' },
      ownGroup: 'gpu',
      want: 'the dedicated taint of every group',
    },
    { name: 'an empty key reaches every key', toleration: { operator: 'Exists' }, want: 'the dedicated taint of every group' },
    { name: 'another effect reaches nothing', toleration: { key: 'dedicated', operator: 'Exists', effect: 'NoExecute' }, want: undefined },
    {
      name: 'Gt reaches a range of groups',
      toleration: { key: 'dedicated', operator: 'Gt', value: '5' },
      want: /^the dedicated taints of a numeric range of groups \(Gt: every group named by an integer greater than its value, wherever kube-scheduler runs with TaintTolerationComparisonOperators on, whatever the API server's gate\)$/,
    },
    {
      name: 'Lt reaches a range of groups too, and an own numeric group does not excuse it',
      toleration: { key: 'dedicated', operator: 'Lt', value: '3000' },
      ownGroup: '2024',
      want: /^the dedicated taints of a numeric range of groups \(Lt: every group named by an integer less than its value/,
    },
    {
      name: 'Gt on an empty key reaches a range of groups of every key',
      toleration: { operator: 'Gt', value: '0' },
      want: /numeric range of groups/,
    },
    {
      name: 'Gt on another key reaches nothing',
      toleration: { key: 'example.com/generation', operator: 'Gt', value: '0' },
      want: undefined,
    },
    { name: 'an unknown operator reaches nothing', toleration: { key: 'dedicated', operator: 'exists' }, want: undefined },
  ];
  for (const { name, toleration, ownGroup = '', want } of rows) {
    it(name, () => {
      const tolerated = foreignGroupsTolerated(toleration, policy, ownGroup);
      if (want instanceof RegExp) {
        assert.match(tolerated ?? '', want);
      } else {
        assert.equal(tolerated, want);
      }
    });
  }

  // Item 8 of the bounded-under-attack issue: kube-scheduler reads its own gate. Groups named by
  // numbers, an UPDATE the API server's ratchet lets add a Gt toleration while its gate is off.
  it('dedicated=2024: {key: dedicated, operator: Gt, value: "0"} reaches group 2024 whatever the gate, as a scheduler with the gate on matches it', () => {
    const toleration: Toleration = { key: 'dedicated', operator: 'Gt', value: '0' };
    const taint2024 = { key: 'dedicated', value: '2024', effect: 'NoSchedule' as const };
    // What a kube-scheduler with the gate on decides, and one with it off.
    assert.equal(toleratesTaint(toleration, taint2024, { TaintTolerationComparisonOperators: true }), true);
    assert.equal(toleratesTaint(toleration, taint2024, { TaintTolerationComparisonOperators: false }), false);
    // The tenancy guarantee takes the scheduler that matches, for a namespace of no group and for another numeric group.
    assert.match(foreignGroupsTolerated(toleration, policy, '') ?? '', /numeric range of groups/);
    assert.match(foreignGroupsTolerated(toleration, policy, '7') ?? '', /numeric range of groups/);
    // It never counts as the own group's toleration, under any gate.
    assert.equal(toleratesOwnGroup(toleration, taint2024), false);
  });
});

describe('nodeGroups, nodeNameProblem, missingNodeProblem', () => {
  const gpuNode = node('gpu-1', { dedicated: 'gpu' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]);
  const taintedOnly = node('tainted-1', {}, [
    { key: 'dedicated', value: 'team-c', effect: 'NoSchedule' },
    { key: 'dedicated', value: 'x', effect: 'NoExecute' },
  ]);
  const plain = node('plain-1');

  it('a node belongs to its label and to the group of its dedicated taint, of the policy effect only', () => {
    assert.deepEqual(nodeGroups(gpuNode, policy), { label: 'gpu', all: new Set(['gpu']) });
    assert.deepEqual(nodeGroups(taintedOnly, policy), { label: undefined, all: new Set(['team-c']) });
    assert.deepEqual(nodeGroups(plain, policy), { label: undefined, all: new Set() });
  });

  it("another group's node is foreign; a tenant's node outside its label is not its own", () => {
    assert.equal(nodeNameProblem(gpuNode, policy, '', false, 'spec')?.foreign, true);
    assert.equal(nodeNameProblem(taintedOnly, policy, 'gpu', true, 'spec')?.foreign, true);
    assert.equal(nodeNameProblem(gpuNode, policy, 'gpu', true, 'spec'), undefined);
    assert.match(
      nodeNameProblem(plain, policy, 'gpu', true, 'spec')?.message ?? '',
      /^spec\.nodeName "plain-1" is not a node of group "gpu"/,
    );
    assert.equal(nodeNameProblem(plain, policy, '', false, 'spec'), undefined);
  });

  it('a node that does not exist reaches every group', () => {
    const problem = missingNodeProblem('new-node', policy, 'spec.template.spec');
    assert.equal(problem.foreign, true);
    assert.match(problem.message, /^spec\.template\.spec\.nodeName "new-node" names no existing node/);
  });
});
