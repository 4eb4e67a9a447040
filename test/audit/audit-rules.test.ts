import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Node, Pod, Toleration } from '../../src/api/types.js';
import {
  auditNodeSide,
  auditPod,
  auditRuleNames,
  isStoredMirrorPod,
  nodeSideRuleNames,
  claimRuleNames,
  type AuditSettings,
  type PodSurroundings,
} from '../../src/audit/audit-rules.js';
import { allPluginNames, type PluginName } from '../../src/plugins/registry.js';
import { loadPolicyDirectory } from '../../src/tenancy/policy-directory.js';
import { emptyPolicySet } from '../../src/tenancy/policy-set.js';
import {
  auditNamespaces,
  auditNodes,
  auditRows,
  auditSkipRows,
  fakeMirrorPods,
  policiesDir,
  storedPod,
  terminatedPods,
} from '../support/audit-fixtures.js';

const policies = loadPolicyDirectory(policiesDir).set;

function settings(overrides: Partial<AuditSettings> = {}): AuditSettings {
  return {
    gates: defaultFeatureGates,
    enabled: new Set<PluginName>(allPluginNames),
    policies,
    exclusion: {
      names: new Set(['kube-system', 'kube-node-lease', 'tolerator-system']),
      label: { key: 'tolerator.dev/ignore', value: 'true' },
    },
    all: false,
    ...overrides,
  };
}

function surroundings(pod: Pod): PodSurroundings {
  return {
    namespace: auditNamespaces.find((namespace) => namespace.metadata.name === pod.metadata?.namespace),
    node: auditNodes.find((node) => node.metadata.name === pod.spec?.nodeName),
    nodesKnown: true,
  };
}

function rulesOf(pod: Pod, overrides: Partial<AuditSettings> = {}): string[] {
  const result = auditPod(pod, surroundings(pod), settings(overrides));
  assert.ok(result.violations !== undefined, `the pod was audited, not skipped as ${result.skipped ?? ''}`);
  return result.violations.map((violation) => violation.rule).sort();
}

describe('audit rules: each rule with a pod that breaks it and one that keeps it', () => {
  for (const row of auditRows) {
    const name = (row.pod.metadata as { name: string }).name;
    it(`${row.about}: ${name} ${row.breaks ? 'breaks it' : 'keeps it'}`, () => {
      const rules = rulesOf(row.pod);
      assert.deepEqual(rules, [...row.expected].sort());
      assert.equal(rules.includes(row.about), row.breaks);
    });
  }

  it('covers every pod rule both ways (the node-side rules: auditNodeSide below; the claim rule: auditClaim)', () => {
    const notPodRules: readonly string[] = [...nodeSideRuleNames, ...claimRuleNames];
    for (const rule of auditRuleNames.filter((name) => !notPodRules.includes(name))) {
      assert.ok(
        auditRows.some((row) => row.about === rule && row.breaks),
        `a pod breaking ${rule}`,
      );
      assert.ok(
        auditRows.some((row) => row.about === rule && !row.breaks),
        `a pod keeping ${rule}`,
      );
    }
  });

  it('names the policy of a tenancy rule, the pod and its node, and says what to do', () => {
    const row = auditRows.find((candidate) => candidate.about === 'missing-pair' && candidate.breaks);
    assert.ok(row);
    const result = auditPod(row.pod, surroundings(row.pod), settings());
    assert.deepEqual(
      result.violations?.map(({ namespace, name, node, rule, policy }) => ({ namespace, name, node, rule, policy })),
      [
        {
          namespace: 'tenant-a',
          name: 'tenant-without-pair',
          node: 'node-a',
          rule: 'missing-pair',
          policy: 'dedicated-by-namespace-label',
        },
      ],
    );
    const [first] = result.violations ?? [];
    assert.ok(first);
    const message = first.message;
    assert.match(message, /spec\.tolerations lacks \{key: dedicated, operator: Equal, value: a, effect: NoSchedule\}/);
    assert.match(message, /dedicated In \[a\] is missing in spec\.affinity\.nodeAffinity\.requiredDuringSchedulingIgnoredDuringExecution/);
    assert.match(message, /recreate the pod/);
  });
});

describe('audit rules: what is left out', () => {
  for (const row of auditSkipRows) {
    const name = (row.pod.metadata as { name: string }).name;
    it(`${name}: skipped as ${row.reason}, audited with --all`, () => {
      assert.deepEqual(auditPod(row.pod as Pod, surroundings(row.pod as Pod), settings()), { skipped: row.reason });
      assert.deepEqual(rulesOf(row.pod as Pod, { all: true }), [...row.withAll].sort());
    });
  }

  for (const pod of terminatedPods) {
    it(`${(pod.metadata as { name: string }).name}: a terminated pod is skipped even with --all`, () => {
      assert.deepEqual(auditPod(pod as Pod, surroundings(pod as Pod), settings({ all: true })), { skipped: 'terminated' });
    });
  }

  for (const row of fakeMirrorPods) {
    it(`${(row.pod.metadata as { name: string }).name}: the mirror annotation without the kubelet's Node reference is an ordinary pod`, () => {
      assert.equal(isStoredMirrorPod(row.pod as Pod, surroundings(row.pod as Pod).node), false);
      assert.deepEqual(rulesOf(row.pod as Pod), [...row.expected].sort());
    });
  }

  it('the exclusion flags decide which namespaces are left out', () => {
    const pod = storedPod({ namespace: 'kube-system', name: 'coredns', node: 'plain' }) as Pod;
    const none = { exclusion: { names: new Set<string>(), label: undefined } };
    assert.deepEqual(rulesOf(pod, none), ['missing-default-tolerations', 'missing-memory-pressure']);
  });

  it('a rule is judged only while its plugin is enabled', () => {
    const pod = storedPod({
      namespace: 'shared',
      name: 'bare',
      node: 'node-b',
      tolerations: [{ key: 'x', operator: 'Gt', value: '1' }],
    }) as Pod;
    assert.deepEqual(rulesOf(pod), ['foreign-node', 'invalid-toleration', 'missing-default-tolerations', 'missing-memory-pressure']);
    const enabled = new Set<PluginName>(allPluginNames.filter((name) => name !== 'DefaultTolerationSeconds' && name !== 'DedicatedNodes'));
    assert.deepEqual(rulesOf(pod, { enabled }), ['invalid-toleration', 'missing-memory-pressure']);
  });

  it('without policies no tenancy rule applies, unknown-node included (the webhook admits such a pod then)', () => {
    const pod = storedPod({
      namespace: 'shared',
      name: 'ghost',
      node: 'ghost',
      tolerations: [{ key: 'dedicated', operator: 'Exists' }],
    }) as Pod;
    assert.deepEqual(rulesOf(pod, { policies: emptyPolicySet }), ['missing-default-tolerations', 'missing-memory-pressure']);
  });

  it('with the comparison gate on, a canonical Gt toleration is valid', () => {
    const pod = storedPod({
      namespace: 'shared',
      name: 'gt',
      node: 'plain',
      burstable: false,
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'cpu-gen', operator: 'Gt', value: '5', effect: 'NoSchedule' },
      ],
    }) as Pod;
    assert.deepEqual(rulesOf(pod), ['invalid-toleration']);
    assert.deepEqual(rulesOf(pod, { gates: { ...defaultFeatureGates, TaintTolerationComparisonOperators: true } }), []);
  });

  it('invalid-toleration of a pod of 5,000 comparison tolerations read with the gate off is one bounded finding', () => {
    const tolerations = Array.from({ length: 5_000 }, (_, i) => ({ key: `k${i}`, operator: 'Gt', value: '1', effect: 'NoSchedule' }));
    const pod = storedPod({ namespace: 'shared', name: 'many-gt', node: 'plain', burstable: false, tolerations }) as Pod;
    const result = auditPod(pod, { namespace: undefined, node: auditNodes[2], nodesKnown: true }, settings());
    const found = result.violations?.filter((violation) => violation.rule === 'invalid-toleration') ?? [];
    assert.equal(found.length, 1);
    const [only] = found;
    assert.ok(only);
    // The first 1,000 field errors are examined (as the review's validation keeps them), the other 4,000 counted.
    assert.match(only.message, /; and 4000 more field errors; fix the toleration/);
    assert.ok(only.message.length < 2_000, `message of ${only.message.length} characters`);
  });

  it('a namespace claimed by two groups is judged as belonging to none', () => {
    // The prefix policy gives team-a-x the group team-a; the label policy gives it b.
    const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a-x', labels: { dedicated: 'b' } } };
    const pod = storedPod({
      namespace: 'team-a-x',
      name: 'p',
      node: 'plain',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'dedicated', operator: 'Equal', value: 'b', effect: 'NoSchedule' },
      ],
    }) as Pod;
    const result = auditPod(pod, { namespace, node: auditNodes[2], nodesKnown: true }, settings());
    assert.deepEqual(
      result.violations?.map((violation) => violation.rule),
      ['foreign-toleration'],
    );
    const [only] = result.violations ?? [];
    assert.ok(only);
    assert.match(only.message, /claimed by more than one group/);
  });

  it('dedicated=2024: a stored pod with {key: dedicated, operator: Gt, value: "0"} breaks foreign-toleration with the gate off, as admission judges it', () => {
    const pod = storedPod({
      namespace: 'shared',
      name: 'skew',
      node: 'plain',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'dedicated', operator: 'Gt', value: '0', effect: 'NoSchedule' },
      ],
    }) as Pod;
    for (const gate of [false, true]) {
      const result = auditPod(
        pod,
        surroundings(pod),
        settings({ gates: { ...defaultFeatureGates, TaintTolerationComparisonOperators: gate } }),
      );
      const message = result.violations?.find((violation) => violation.rule === 'foreign-toleration')?.message ?? '';
      assert.match(message, /spec\.tolerations\[3\] tolerates the dedicated taints of a numeric range of groups/, `gate ${String(gate)}`);
    }
  });

  it('spells out at most 10 tolerations in a message, and counts the rest', () => {
    const tolerations = Array.from({ length: 25 }, (_, i) => ({
      key: 'dedicated',
      operator: 'Equal' as const,
      value: `g${i}`,
      effect: 'NoSchedule' as const,
    }));
    const pod = storedPod({ namespace: 'shared', name: 'many', node: 'plain', tolerations }) as Pod;
    const result = auditPod(pod, surroundings(pod), settings());
    const message = result.violations?.find((violation) => violation.rule === 'foreign-toleration')?.message ?? '';
    assert.equal(message.match(/tolerates the dedicated taint of group/g)?.length, 10);
    assert.match(message, /and 15 more/);
  });
});

describe("missing-default-tolerations follows DefaultTolerationSeconds' and the DaemonSet controller's own rules", () => {
  const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };
  const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' };
  const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' };
  const daemonOwner = [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent', uid: 'uid-ds', controller: true }];
  const daemonSet = [
    notReady,
    unreachable,
    ...['disk-pressure', 'memory-pressure', 'pid-pressure', 'unschedulable'].map((condition) => ({
      key: `node.kubernetes.io/${condition}`,
      operator: 'Exists',
      effect: 'NoSchedule',
    })),
  ];
  const rows: { rule: string; tolerations: JsonObject[]; daemon?: boolean; hostNetwork?: boolean; missing: boolean }[] = [
    {
      rule: 'an empty key with an empty effect (tolerate everything) covers both conditions',
      tolerations: [{ operator: 'Exists' }],
      missing: false,
    },
    {
      rule: 'only key and effect are read: not-ready Equal "x" and unreachable with negative seconds count',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Equal', value: 'x', effect: 'NoExecute' },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: -10 },
      ],
      missing: false,
    },
    {
      rule: 'an empty effect covers NoExecute',
      tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists' }, unreachable],
      missing: false,
    },
    {
      rule: 'a NoSchedule toleration of the key does not cover NoExecute',
      tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' }, unreachable],
      missing: true,
    },
    {
      rule: 'the deprecated node.alpha.kubernetes.io/notReady key does not count',
      tolerations: [{ key: 'node.alpha.kubernetes.io/notReady', operator: 'Exists', effect: 'NoExecute' }, unreachable],
      missing: true,
    },
    {
      rule: 'a DaemonSet pod with the controller set has what the controller gives it',
      tolerations: daemonSet,
      daemon: true,
      missing: false,
    },
    {
      rule: 'a host-network DaemonSet pod also needs network-unavailable:NoSchedule',
      tolerations: daemonSet,
      daemon: true,
      hostNetwork: true,
      missing: true,
    },
    {
      rule: "a DaemonSet pod whose not-ready toleration keeps tolerationSeconds lacks the controller's (it replaces the entry in place, dropping the seconds)",
      tolerations: [{ ...notReady, tolerationSeconds: 300 }, ...daemonSet.slice(1)],
      daemon: true,
      missing: true,
    },
  ];
  for (const row of rows) {
    it(row.rule, () => {
      const pod = storedPod({
        namespace: 'shared',
        name: 'probe',
        node: 'plain',
        tolerations: [...(row.tolerations as Toleration[]), memoryPressure],
        ...(row.daemon === true ? { ownerReferences: daemonOwner } : {}),
      }) as Pod;
      const subject: Pod = row.hostNetwork === true ? { ...pod, spec: { ...pod.spec, hostNetwork: true } } : pod;
      assert.equal(rulesOf(subject).includes('missing-default-tolerations'), row.missing);
    });
  }
});

describe('auditNodeSide: Nodes and NodePools that break the node half of the pattern', () => {
  const taint = { key: 'dedicated', value: 'pci', effect: 'NoSchedule' as const };
  const nodes: Node[] = [
    { metadata: { name: 'pci-ok', labels: { dedicated: 'pci' } }, spec: { taints: [taint] } },
    { metadata: { name: 'pci-untainted', labels: { dedicated: 'pci' } }, spec: {} },
    { metadata: { name: 'pci-unlabelled', labels: {} }, spec: { taints: [taint] } },
    { metadata: { name: 'plain', labels: {} }, spec: {} },
  ];
  const nodePools = [
    {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'pci' },
      spec: { template: { metadata: { labels: { dedicated: 'pci' } }, spec: { taints: [taint] } } },
    },
    {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'pci-open' },
      spec: { template: { metadata: { labels: { dedicated: 'pci' } }, spec: {} } },
    },
    { apiVersion: 'karpenter.sh/v1', kind: 'NodePool', metadata: { name: 'general' }, spec: { template: { spec: {} } } },
  ];

  it('reports each breaking Node and NodePool by name, kind, rule and policy, cluster-scoped', () => {
    const found = auditNodeSide(nodes, nodePools, settings()).map(({ namespace, name, kind, node, rule, policy }) => ({
      namespace,
      name,
      kind,
      node,
      rule,
      policy,
    }));
    assert.deepEqual(found, [
      {
        namespace: '',
        name: 'pci-untainted',
        kind: 'Node',
        node: 'pci-untainted',
        rule: 'node-pattern',
        policy: 'dedicated-by-namespace-label',
      },
      {
        namespace: '',
        name: 'pci-unlabelled',
        kind: 'Node',
        node: 'pci-unlabelled',
        rule: 'node-pattern',
        policy: 'dedicated-by-namespace-label',
      },
      { namespace: '', name: 'pci-open', kind: 'NodePool', node: '', rule: 'nodepool-pattern', policy: 'dedicated-by-namespace-label' },
    ]);
  });

  it('nothing without policies, or with DedicatedNodes disabled', () => {
    assert.deepEqual(auditNodeSide(nodes, nodePools, settings({ policies: emptyPolicySet })), []);
    assert.deepEqual(
      auditNodeSide(
        nodes,
        nodePools,
        settings({ enabled: new Set<PluginName>(allPluginNames.filter((name) => name !== 'DedicatedNodes')) }),
      ),
      [],
    );
  });
});
