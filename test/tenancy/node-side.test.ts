import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import assert from 'node:assert/strict';
import type { JsonObject } from '../../src/api/types.js';
import { nodeClaimFindings, nodeFindings, nodePoolFindings } from '../../src/tenancy/node-side.js';
import { compilePolicy, labelPolicySpec, node } from './tenancy-fixtures.js';

const policy = compilePolicy('by-label');
const named = compilePolicy('named', { ...labelPolicySpec(), nodePools: { pci: ['pci-general', 'pci-gpu'], web: ['web'] } });

interface TemplateParts {
  labels?: Record<string, unknown>;
  requirements?: unknown[];
  taints?: unknown[];
  startupTaints?: unknown[];
}

/** A karpenter.sh/v1 NodePool as Karpenter's documentation writes one. */
function nodePool(name: string, parts: TemplateParts = {}): JsonObject {
  return {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name },
    spec: {
      template: {
        metadata: { labels: parts.labels ?? {} },
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          requirements: parts.requirements ?? [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
          taints: parts.taints ?? [],
          ...(parts.startupTaints === undefined ? {} : { startupTaints: parts.startupTaints }),
        },
      },
    },
  };
}

const pciTaint = { key: 'dedicated', value: 'pci', effect: 'NoSchedule' };
const pciIn = { key: 'dedicated', operator: 'In', values: ['pci'] };

describe('node-side: a NodePool labels and taints its nodes for one group', () => {
  const cases: { name: string; pool: JsonObject; fields: string[]; says?: RegExp }[] = [
    { name: 'a NodePool of no group: no label, no taint', pool: nodePool('general'), fields: [] },
    {
      name: 'template label and taint of the group',
      pool: nodePool('pci', { labels: { dedicated: 'pci' }, taints: [pciTaint] }),
      fields: [],
    },
    { name: 'single-value In requirement and taint', pool: nodePool('pci', { requirements: [pciIn], taints: [pciTaint] }), fields: [] },
    {
      name: 'a label without the taint',
      pool: nodePool('pci', { labels: { dedicated: 'pci' } }),
      fields: ['spec.template.metadata.labels[dedicated]'],
      says: /labels its nodes for group "pci" .*without the group's taint dedicated=pci:NoSchedule.*add \{key: dedicated, value: "pci", effect: NoSchedule\} to spec\.template\.spec\.taints/,
    },
    {
      name: 'a single-value In requirement without the taint (Karpenter makes it a node label)',
      pool: nodePool('pci', { requirements: [pciIn] }),
      fields: ['spec.template.spec.requirements[0]'],
      says: /labels its nodes for group "pci"/,
    },
    {
      name: 'the taint only in startupTaints does not count',
      pool: nodePool('pci', { labels: { dedicated: 'pci' }, startupTaints: [pciTaint] }),
      fields: ['spec.template.metadata.labels[dedicated]'],
      says: /spec\.template\.spec\.startupTaints\[0\] does not count: Karpenter's startupTaints are removed/,
    },
    {
      name: 'a taint without the label',
      pool: nodePool('pci', { taints: [pciTaint] }),
      fields: ['spec.template.spec.taints[0]'],
      says: /taints its nodes for group "pci" but does not label them for it/,
    },
    {
      name: 'labelled for one group, tainted for another',
      pool: nodePool('pci', { labels: { dedicated: 'pci' }, taints: [{ ...pciTaint, value: 'web' }] }),
      fields: ['spec.template.metadata.labels[dedicated]', 'spec.template.spec.taints[0]'],
      says: /taints its nodes for group "web" but labels them for group "pci"/,
    },
    {
      name: 'the group key with another effect is not the group taint',
      pool: nodePool('pci', { labels: { dedicated: 'pci' }, taints: [pciTaint, { ...pciTaint, effect: 'PreferNoSchedule' }] }),
      fields: ['spec.template.spec.taints[1]'],
      says: /effect "PreferNoSchedule", but the policy's group taint is dedicated=<group>:NoSchedule/,
    },
    {
      name: 'Exists on the group label makes nodes for every group',
      pool: nodePool('any', { requirements: [{ key: 'dedicated', operator: 'Exists' }], taints: [pciTaint] }),
      fields: ['spec.template.spec.requirements[0]'],
      says: /requirement dedicated Exists on the group label lets Karpenter give each node whatever value/,
    },
    {
      name: 'NotIn on the group label makes nodes for every other group',
      pool: nodePool('any', { requirements: [{ key: 'dedicated', operator: 'NotIn', values: ['pci'] }] }),
      fields: ['spec.template.spec.requirements[0]'],
      says: /dedicated NotIn/,
    },
    {
      name: 'Gt on the group label makes nodes for every group named by a larger integer',
      pool: nodePool('any', { requirements: [{ key: 'dedicated', operator: 'Gt', values: ['5'] }] }),
      fields: ['spec.template.spec.requirements[0]'],
      says: /dedicated Gt/,
    },
    {
      name: 'Gt and Lt with no integer between them label nothing',
      pool: nodePool('none', {
        requirements: [
          { key: 'dedicated', operator: 'Gt', values: ['5'] },
          { key: 'dedicated', operator: 'Lt', values: ['6'] },
        ],
      }),
      fields: [],
    },
    {
      name: 'a multi-value In labels each node for any one of its groups',
      pool: nodePool('two', { requirements: [{ key: 'dedicated', operator: 'In', values: ['pci', 'web'] }], taints: [pciTaint] }),
      fields: ['spec.template.spec.requirements[0]'],
      says: /In \["pci", "web"\] lets Karpenter label each node with whichever of these groups/,
    },
    {
      name: 'a multi-value In narrowed to one value by another requirement is that group',
      pool: nodePool('pci', {
        requirements: [
          { key: 'dedicated', operator: 'In', values: ['pci', 'web'] },
          { key: 'dedicated', operator: 'NotIn', values: ['web'] },
        ],
        taints: [pciTaint],
      }),
      fields: [],
    },
    {
      name: 'a multi-value In narrowed by the template label is the label group',
      pool: nodePool('pci', {
        labels: { dedicated: 'pci' },
        requirements: [{ key: 'dedicated', operator: 'In', values: ['pci', 'web'] }],
        taints: [pciTaint],
      }),
      fields: [],
    },
    {
      name: 'DoesNotExist on the group label: a NodePool of no group',
      pool: nodePool('general', { requirements: [{ key: 'dedicated', operator: 'DoesNotExist' }] }),
      fields: [],
    },
    {
      name: 'an empty label value names no group, as on a Node',
      pool: nodePool('blank', { labels: { dedicated: '' }, requirements: [{ key: 'dedicated', operator: 'In', values: [''] }] }),
      fields: [],
    },
    {
      name: 'a template label with a contradicting requirement still labels the nodes (Any() gives nothing, the label stays)',
      pool: nodePool('pci', { labels: { dedicated: 'pci' }, requirements: [{ key: 'dedicated', operator: 'In', values: ['web'] }] }),
      fields: ['spec.template.metadata.labels[dedicated]'],
      says: /labels its nodes for group "pci"/,
    },
  ];
  for (const { name, pool, fields, says } of cases) {
    it(name, () => {
      const findings = nodePoolFindings(pool, [policy]);
      assert.deepEqual(
        findings.map((finding) => finding.field),
        fields,
        findings.map((finding) => finding.message).join('\n'),
      );
      for (const finding of findings) {
        assert.match(finding.message, /^NodePool "[^"]*" spec\.template\./);
        assert.match(finding.message, /\(policy "by-label"\)$/);
        assert.equal(finding.policy, policy);
      }
      if (says !== undefined) assert.match(findings.map((finding) => finding.message).join('\n'), says);
    });
  }
});

describe('node-side: a NodePool a group names serves exactly that group (spec.nodePools)', () => {
  const cases: { name: string; pool: JsonObject; says: RegExp | undefined }[] = [
    {
      name: 'named and serving its group',
      pool: nodePool('pci-gpu', { labels: { dedicated: 'pci' }, taints: [pciTaint] }),
      says: undefined,
    },
    {
      name: 'named but serving no group',
      pool: nodePool('pci-general'),
      says: /NodePool "pci-general" spec\.template\.metadata\.labels: is named for group "pci" in TenancyPolicy spec\.nodePools, but does not label its nodes for it/,
    },
    {
      name: 'named for one group, serving another',
      pool: nodePool('web', { labels: { dedicated: 'pci' }, taints: [pciTaint] }),
      says: /is named for group "web" in TenancyPolicy spec\.nodePools, but labels its nodes for group "pci"/,
    },
    {
      name: 'serving a group that names other NodePools',
      pool: nodePool('stray', { labels: { dedicated: 'pci' }, taints: [pciTaint] }),
      says: /which names its NodePools in TenancyPolicy spec\.nodePools \("pci-general", "pci-gpu"\), and this one is not among them/,
    },
    {
      name: 'serving a group that names none',
      pool: nodePool('batch', { labels: { dedicated: 'batch' }, taints: [{ ...pciTaint, value: 'batch' }] }),
      says: undefined,
    },
  ];
  for (const { name, pool, says } of cases) {
    it(name, () => {
      const messages = nodePoolFindings(pool, [named]).map((finding) => finding.message);
      if (says === undefined) assert.deepEqual(messages, []);
      else {
        assert.equal(messages.length, 1, messages.join('\n'));
        assert.match(messages[0] ?? '', says);
      }
    });
  }

  it('the group label karpenter.sh/nodepool: every node carries its NodePool name, so the name is the group', () => {
    const byPool = compilePolicy('by-pool', { ...labelPolicySpec(), nodeLabel: 'karpenter.sh/nodepool' });
    assert.deepEqual(nodePoolFindings(nodePool('pci', { taints: [pciTaint] }), [byPool]), []);
    const [finding] = nodePoolFindings(nodePool('pci'), [byPool]);
    assert.match(finding?.message ?? '', /NodePool "pci" metadata\.name: labels its nodes for group "pci"/);
  });
});

describe('node-side: labels Karpenter derives from the NodePool itself (redteam6)', () => {
  const kwokClassLabel = 'karpenter.kwok.sh/kwoknodeclass';
  const byClass = compilePolicy('by-class', { ...labelPolicySpec(), nodeLabel: kwokClassLabel });
  const withClass = (name: string, className: string, parts: TemplateParts = {}): JsonObject => {
    const pool = nodePool(name, parts);
    const spec = (pool.spec as JsonObject).template as JsonObject;
    ((spec.spec as JsonObject).nodeClassRef as JsonObject).name = className;
    return pool;
  };

  it("the NodeClass label: every node carries <nodeClassRef.group>/<lowercased kind>=<nodeClassRef.name> (NewNodeClaimTemplate), so a NodePool of group pci's NodeClass without pci's taint is a finding", () => {
    const findings = nodePoolFindings(withClass('tenant-pool', 'pci'), [byClass]);
    assert.deepEqual(
      findings.map((finding) => finding.field),
      ['spec.template.spec.nodeClassRef.name'],
    );
    assert.match(
      findings[0]?.message ?? '',
      /^NodePool "tenant-pool" spec\.template\.spec\.nodeClassRef\.name: labels its nodes for group "pci" \(karpenter\.kwok\.sh\/kwoknodeclass=pci\) without the group's taint dedicated=pci:NoSchedule/,
    );
    assert.deepEqual(nodePoolFindings(withClass('tenant-pool', 'pci', { taints: [pciTaint] }), [byClass]), []);
  });

  it('the NodeClass label: a template label or requirement on the key does not change it (Karpenter assigns the NodeClass name over them)', () => {
    const pool = withClass('tenant-pool', 'pci', { labels: { [kwokClassLabel]: 'web' }, taints: [{ ...pciTaint, value: 'web' }] });
    const fields = nodePoolFindings(pool, [byClass]).map((finding) => finding.field);
    assert.deepEqual(fields, ['spec.template.spec.nodeClassRef.name', 'spec.template.spec.taints[0]']);
  });

  it('the NodeClass label: the kind is lowercased as Go strings.ToLower does (an EC2NodeClass gives karpenter.k8s.aws/ec2nodeclass)', () => {
    const byEc2 = compilePolicy('by-ec2', { ...labelPolicySpec(), nodeLabel: 'karpenter.k8s.aws/ec2nodeclass' });
    const pool = nodePool('tenant-pool');
    (((pool.spec as JsonObject).template as JsonObject).spec as JsonObject).nodeClassRef = {
      group: 'karpenter.k8s.aws',
      kind: 'EC2NodeClass',
      name: 'pci',
    };
    assert.deepEqual(
      nodePoolFindings(pool, [byEc2]).map((finding) => finding.field),
      ['spec.template.spec.nodeClassRef.name'],
    );
  });

  it('the NodePool name under spec.nodeLabelValues: NodePool pci-a of group pci carries the group taint dedicated=pci, as its Nodes are judged', () => {
    const byPool = compilePolicy('by-pool-values', {
      ...labelPolicySpec(),
      nodeLabel: 'karpenter.sh/nodepool',
      nodeLabelValues: { pci: ['pci-a', 'pci-b'] },
    });
    assert.deepEqual(nodePoolFindings(nodePool('pci-a', { taints: [pciTaint] }), [byPool]), []);
    const [finding] = nodePoolFindings(nodePool('pci-a', { taints: [{ ...pciTaint, value: 'pci-a' }] }), [byPool]);
    assert.match(
      finding?.message ?? '',
      /labels its nodes for group "pci" \(karpenter\.sh\/nodepool=pci-a\) without the group's taint dedicated=pci:NoSchedule/,
    );
    // The Node Karpenter makes from it is judged the same way.
    assert.deepEqual(nodeFindings(node('pci-a-1', { 'karpenter.sh/nodepool': 'pci-a' }, [pciTaint]), [byPool]), []);
  });
});

describe('node-side: a NodeClaim written directly (redteam6: Karpenter launches any NodeClaim of a NodeClass it serves, IsManaged)', () => {
  const nodeClaim = (parts: TemplateParts): JsonObject => ({
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodeClaim',
    metadata: { name: 'static-1', labels: parts.labels ?? {} },
    spec: {
      nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
      requirements: parts.requirements ?? [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }],
      taints: parts.taints ?? [],
      ...(parts.startupTaints === undefined ? {} : { startupTaints: parts.startupTaints }),
    },
  });
  const cases: { name: string; claim: JsonObject; fields: string[]; says?: RegExp }[] = [
    { name: 'a NodeClaim of no group', claim: nodeClaim({}), fields: [] },
    { name: 'labelled and tainted for its group', claim: nodeClaim({ labels: { dedicated: 'pci' }, taints: [pciTaint] }), fields: [] },
    {
      name: 'a NodeClaim labelled for a group without its taint',
      claim: nodeClaim({ labels: { dedicated: 'pci' } }),
      fields: ['metadata.labels[dedicated]'],
      says: /^NodeClaim "static-1" metadata\.labels\[dedicated\]: labels its node for group "pci" \(dedicated=pci\) without the group's taint dedicated=pci:NoSchedule: .*add \{key: dedicated, value: "pci", effect: NoSchedule\} to spec\.taints \(policy "by-label"\)$/,
    },
    {
      name: 'a NodeClaim whose single-value In requirement labels its node (the provider copies it), without the taint',
      claim: nodeClaim({ requirements: [pciIn] }),
      fields: ['spec.requirements[0]'],
      says: /labels its node for group "pci"/,
    },
    {
      name: "a NodeClaim with the group's taint only in startupTaints",
      claim: nodeClaim({ labels: { dedicated: 'pci' }, startupTaints: [pciTaint] }),
      fields: ['metadata.labels[dedicated]'],
      says: /spec\.startupTaints\[0\] does not count/,
    },
    {
      name: 'karpenter.sh/do-not-sync-taints: a NodeClaim labelled so keeps its spec.taints off the Node (syncNode), so its group taint does not count',
      claim: nodeClaim({ labels: { dedicated: 'pci', 'karpenter.sh/do-not-sync-taints': 'true' }, taints: [pciTaint] }),
      fields: ['metadata.labels[dedicated]'],
      says: /without the group's taint dedicated=pci:NoSchedule.*metadata\.labels\[karpenter\.sh\/do-not-sync-taints\] is "true": Karpenter does not put spec\.taints on a Node whose provider copied that label onto it/,
    },
    {
      name: 'a NodeClaim tainted for a group it does not label',
      claim: nodeClaim({ taints: [pciTaint] }),
      fields: ['spec.taints[0]'],
      says: /^NodeClaim "static-1" spec\.taints\[0\]: taints its node for group "pci" but does not label it for it/,
    },
  ];
  for (const { name, claim, fields, says } of cases) {
    it(name, () => {
      const findings = nodeClaimFindings(claim, [policy]);
      assert.deepEqual(
        findings.map((finding) => finding.field),
        fields,
        findings.map((finding) => finding.message).join('\n'),
      );
      if (says !== undefined) assert.match(findings.map((finding) => finding.message).join('\n'), says);
    });
  }
});

describe('node-side: a Node carries its group label and taint together', () => {
  const cases: {
    name: string;
    labels: Record<string, string>;
    taints: { key: string; value?: string; effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute' }[];
    says: RegExp[];
  }[] = [
    { name: 'labelled and tainted for one group', labels: { dedicated: 'pci' }, taints: [pciTaint as never], says: [] },
    { name: 'a node of no group', labels: {}, taints: [], says: [] },
    {
      name: 'labelled but not tainted',
      labels: { dedicated: 'pci' },
      taints: [],
      says: [
        /^Node "n1" metadata\.labels\[dedicated\]: labels the node for group "pci" .*kubectl taint node <name> dedicated=pci:NoSchedule/,
      ],
    },
    {
      name: 'tainted but not labelled',
      labels: {},
      taints: [pciTaint as never],
      says: [/^Node "n1" spec\.taints\[0\]: taints the node for group "pci"/],
    },
    {
      name: 'labelled for one group and tainted for another',
      labels: { dedicated: 'web' },
      taints: [pciTaint as never],
      says: [/labels the node for group "web"/, /taints the node for group "pci" but labels it for group "web"/],
    },
    {
      name: 'made from a NodePool the policy names for another group',
      labels: { dedicated: 'web', 'karpenter.sh/nodepool': 'pci-gpu' },
      taints: [{ ...pciTaint, value: 'web' } as never],
      says: [
        /was made from NodePool "pci-gpu", which TenancyPolicy spec\.nodePools names for group "pci", but is labelled for group "web"/,
      ],
    },
  ];
  for (const { name, labels, taints, says } of cases) {
    it(name, () => {
      const messages = nodeFindings(node('n1', labels, taints), [named]).map((finding) => finding.message);
      assert.equal(messages.length, says.length, messages.join('\n'));
      says.forEach((pattern, index) => {
        assert.match(messages[index] ?? '', pattern);
      });
    });
  }
});

describe('node-side: adversarial NodePools cost linear work and give bounded messages', () => {
  it('a hostile label value is clipped in every message', () => {
    const hostile = `pci${'x'.repeat(1_000_000)}`;
    const findings = nodePoolFindings(nodePool(hostile, { labels: { dedicated: hostile } }), [policy]);
    assert.equal(findings.length, 1);
    assert.ok((findings[0]?.message.length ?? Infinity) < 2_000, `message of ${findings[0]?.message.length} characters`);
  });

  it('100,000 values of In and 100,000 taints of other groups: bounded messages', () => {
    const values = Array.from({ length: 100_000 }, (_, i) => `g${i}`);
    const taints = values.map((value) => ({ key: 'dedicated', value, effect: 'NoSchedule' }));
    const findings = nodePoolFindings(nodePool('huge', { requirements: [{ key: 'dedicated', operator: 'In', values }], taints }), [policy]);
    assert.ok(findings.length <= 4);
    for (const finding of findings) assert.ok(finding.message.length < 4_000, `message of ${finding.message.length} characters`);
    assert.match(findings.map((f) => f.message).join('\n'), /and 99990 more values/);
  });

  it('requirement lists at n and 4n cost work in proportion (intersections walk the smaller side)', () => {
    // The first requirement holds n values, then n one-value Ins and n NotIns on the group key:
    // an intersection that walked the large set at each step would cost n² (×16 at 4n); the
    // criterion ×8 leaves linear work room for caches and a busy machine.
    const shape = (n: number): JsonObject => {
      const all = Array.from({ length: n }, (_, i) => `g${i}`);
      const requirements: unknown[] = [{ key: 'dedicated', operator: 'In', values: all }];
      for (let i = 0; i < n; i++) requirements.push({ key: 'dedicated', operator: 'In', values: ['g0', `g${i}`] });
      for (let i = 1; i < n; i++) requirements.push({ key: 'dedicated', operator: 'NotIn', values: [`g${i}`] });
      return nodePool('pci', { requirements, taints: [{ ...pciTaint, value: 'g0' }] });
    };
    const leastCpuMicros = (pool: JsonObject): number => {
      assert.deepEqual(nodePoolFindings(pool, [policy]), []);
      let least = Infinity;
      for (let run = 0; run < 3; run++) {
        const started = process.cpuUsage();
        nodePoolFindings(pool, [policy]);
        const used = process.cpuUsage(started);
        least = Math.min(least, used.user + used.system);
      }
      return least;
    };
    const small = leastCpuMicros(shape(5_000));
    const large = leastCpuMicros(shape(20_000));
    assert.ok(large < 8 * Math.max(small, 1_000), `${small} µs at n, ${large} µs at 4n`);
  });

  it('fields of the wrong type are skipped, never trusted or thrown on', () => {
    const broken = {
      metadata: { name: 7 },
      spec: {
        template: {
          metadata: { labels: 'x' },
          spec: { requirements: [null, 5, { key: 'dedicated', operator: 'In', values: 'pci' }], taints: {} },
        },
      },
    };
    assert.doesNotThrow(() => nodePoolFindings(broken, [policy]));
    assert.doesNotThrow(() => nodePoolFindings(null, [policy]));
    assert.doesNotThrow(() => nodePoolFindings([], [policy]));
  });
});

describe('node-side: examples/karpenter-nodepools.yaml', () => {
  it('the shipped NodePools serve their groups as docs/tenancy.md says: no finding', () => {
    const text = readFileSync(new URL('../../examples/karpenter-nodepools.yaml', import.meta.url), 'utf8');
    const pools = parseAllDocuments(text).map((document) => document.toJS() as JsonObject);
    assert.equal(pools.length, 3);
    const restricted = compilePolicy('restricted', {
      ...labelPolicySpec(),
      nodeLabel: 'node-restriction.kubernetes.io/dedicated',
      nodePools: { pci: ['pci-general', 'pci-gpu'] },
    });
    for (const pool of pools) assert.deepEqual(nodePoolFindings(pool, [restricted]), []);
  });
});
