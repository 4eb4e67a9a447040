/**
 * More than one node pool per group (`spec.nodeLabelValues`, src/tenancy/group-node-labels.ts): a
 * group `pci` whose nodes are the pools `pool=pci-a` and `pool=pci-b`. The requirement ANDed into
 * every term is one `In` of both values, so every term still confines the pod to the group; the
 * webhook, the audit and the export agree on it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Node } from '../../src/api/types.js';
import { recognizeTenancyPolicy } from '../../src/export/tenancy-cel.js';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import type { AdmissionAttributes, Operation, PluginContext } from '../../src/plugins/plugin.js';
import { nodeFindings, nodePoolFindings } from '../../src/tenancy/node-side.js';
import { runtimeClassFindings } from '../../src/tenancy/runtime-classes.js';
import { parsePolicyFile } from '../../src/tenancy/policy-directory.js';
import { createPolicyEvaluator, PolicyEvaluationError } from '../../src/tenancy/policy-set.js';
import { formatPolicyLoadError } from '../../src/tenancy/policy.js';
import { compilePolicy, labelPolicySpec, namespace, node, pod, policyDocument } from './tenancy-fixtures.js';

const pools = compilePolicy('pools', {
  ...labelPolicySpec(),
  nodeLabel: 'pool',
  nodeLabelValues: { pci: ['pci-a', 'pci-b'] },
});
const pciTaint = { key: 'dedicated', value: 'pci', effect: 'NoSchedule' as const };
const nodes: Node[] = [
  node('pci-a-1', { pool: 'pci-a' }, [pciTaint]),
  node('pci-b-1', { pool: 'pci-b' }, [pciTaint]),
  node('gpu-1', { pool: 'gpu' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]),
];
const namespaces = { payments: namespace('payments', { dedicated: 'pci' }), ml: namespace('ml', { dedicated: 'gpu' }) };

function context(ns: keyof typeof namespaces): PluginContext {
  return {
    gates: defaultFeatureGates,
    namespace: namespaces[ns],
    node: (name) => nodes.find((candidate) => candidate.metadata.name === name),
    nodesKnown: true,
    nodes: () => nodes,
  };
}

function attributes(operation: Operation, object: JsonObject, ns: string): AdmissionAttributes {
  return {
    operation,
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subResource: '',
    namespace: ns,
    name: 'app',
    object,
    oldObject: undefined,
    dryRun: false,
  };
}

const plugin = createDedicatedNodes(() => ({ policies: [pools] }));

function admit(spec: JsonObject, ns: keyof typeof namespaces = 'payments') {
  const object = pod(spec);
  return plugin.admit(object, attributes('CREATE', object, ns), context(ns));
}

function validate(spec: JsonObject, ns: keyof typeof namespaces = 'payments') {
  const object = pod(spec);
  return plugin.validate(object, attributes('CREATE', object, ns), context(ns));
}

const pciToleration = { key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' };

function required(...terms: JsonObject[]): JsonObject {
  return { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } };
}

function termsOf(object: JsonObject | undefined): unknown {
  const spec = object?.spec as {
    affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: unknown } } };
  };
  return spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
}

describe('multiple node pools per group: spec.nodeLabelValues loads', () => {
  function loadErrors(nodeLabelValues: unknown): string[] {
    return parsePolicyFile('p.yaml', stringify(policyDocument('p', { ...labelPolicySpec(), nodeLabelValues }))).errors.map(
      formatPolicyLoadError,
    );
  }

  it('a value under two groups is refused, naming both', () => {
    assert.ok(
      loadErrors({ pci: ['shared'], gpu: ['shared'] }).some((error) =>
        /the node label value "shared" is named by the groups "pci" and "gpu"/.test(error),
      ),
    );
  });

  it('an empty list, too many values and a value that is no label value are refused', () => {
    assert.ok(
      loadErrors({ pci: [] }).some((error) => /spec\.nodeLabelValues\.pci: must be a list of 1 to 16 node label values/.test(error)),
    );
    assert.ok(loadErrors({ pci: Array.from({ length: 17 }, (_, i) => `p${i}`) }).some((error) => /must be a list of 1 to 16/.test(error)));
    assert.ok(loadErrors({ pci: ['a b'] }).some((error) => /spec\.nodeLabelValues\.pci\.0: must be a node label value/.test(error)));
  });

  it("a namespace whose group is another group's pool value is undecided, never given that pool", () => {
    const evaluator = createPolicyEvaluator({
      object: pod(),
      oldObject: undefined,
      namespace: namespace('x', { dedicated: 'pci-a' }),
      request: {},
    });
    assert.throws(() => evaluator.group(pools), PolicyEvaluationError);
  });
});

describe('multiple node pools per group: the requirement ANDed into every term is one In of every pool', () => {
  it('a pci pod gets pool In [pci-a, pci-b] and the group toleration', () => {
    const outcome = admit({});
    assert.deepEqual(termsOf(outcome.object), [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['pci-a', 'pci-b'] }] }]);
    assert.deepEqual((outcome.object?.spec as { tolerations?: unknown }).tolerations, [pciToleration]);
  });

  it("each of the pod's own terms gets it ANDed in, so no term escapes the group", () => {
    const outcome = admit(
      required(
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
        { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
      ),
    );
    const requirement = { key: 'pool', operator: 'In', values: ['pci-a', 'pci-b'] };
    assert.deepEqual(termsOf(outcome.object), [
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }, requirement] },
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }, requirement] },
    ]);
  });

  it("a term asking for one of the group's pools (In [pci-b]) already confines the pod: kept as it is", () => {
    const own = required({ matchExpressions: [{ key: 'pool', operator: 'In', values: ['pci-b'] }] });
    assert.deepEqual(termsOf(admit(own).object), [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['pci-b'] }] }]);
    assert.equal(validate({ ...own, tolerations: [pciToleration] }).denial, undefined);
  });

  it('a term naming a pool and a value outside the group (In [pci-a, gpu]) does not confine the pod: it is refused', () => {
    const outcome = validate({
      ...required({ matchExpressions: [{ key: 'pool', operator: 'In', values: ['pci-a', 'gpu'] }] }),
      tolerations: [pciToleration],
    });
    assert.match(
      outcome.denial?.reason === 'Forbidden' ? outcome.denial.message : '',
      /must require pool In \[pci-a, pci-b\] in every required node affinity term/,
    );
  });

  it("a nodeSelector on either pool is the group's; on another group's value it is refused, naming both pools", () => {
    assert.equal(admit({ nodeSelector: { pool: 'pci-b' } }).denial, undefined);
    const refused = admit({ nodeSelector: { pool: 'gpu' } });
    assert.match(
      refused.denial?.reason === 'Forbidden' ? refused.denial.message : '',
      /may only run on nodes labelled pool=pci-a or pool=pci-b, but the pod asks for other nodes: spec\.nodeSelector selects pool=gpu/,
    );
  });

  it("a nodeName on either pool's node is the tenant's own; on gpu's it is another group's", () => {
    const pair = {
      tolerations: [pciToleration],
      ...required({ matchExpressions: [{ key: 'pool', operator: 'In', values: ['pci-a', 'pci-b'] }] }),
    };
    assert.equal(validate({ ...pair, nodeName: 'pci-b-1' }).denial, undefined);
    const outcome = validate({ ...pair, nodeName: 'gpu-1' });
    assert.match(outcome.denial?.reason === 'Forbidden' ? outcome.denial.message : '', /spec\.nodeName "gpu-1" is a node of group "gpu"/);
  });

  it('a gpu pod may not ask for a pci pool', () => {
    const outcome = admit({ nodeSelector: { pool: 'pci-a' } }, 'ml');
    assert.match(
      outcome.denial?.reason === 'Forbidden' ? outcome.denial.message : '',
      /spec\.nodeSelector selects pool=pci-a, not the namespace's group gpu/,
    );
  });
});

describe('multiple node pools per group: the node half and the export agree', () => {
  it("a node of either pool tainted with the group's taint keeps the pattern; one tainted for another group breaks it", () => {
    assert.deepEqual(nodeFindings(node('pci-b-2', { pool: 'pci-b' }, [pciTaint]), [pools]), []);
    const [finding] = nodeFindings(node('pci-b-3', { pool: 'pci-b' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]), [pools]);
    assert.match(
      finding?.message ?? '',
      /labels the node for group "pci" \(pool=pci-b\) without the group's taint dedicated=pci:NoSchedule/,
    );
  });

  it("a NodePool of both pools (In [pci-a, pci-b]) serves one group; with another group's value it serves several", () => {
    const nodePool = (values: string[]): JsonObject => ({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name: 'pci' },
      spec: { template: { spec: { requirements: [{ key: 'pool', operator: 'In', values }], taints: [pciTaint] } } },
    });
    assert.deepEqual(nodePoolFindings(nodePool(['pci-a', 'pci-b']), [pools]), []);
    assert.match(
      nodePoolFindings(nodePool(['pci-a', 'gpu']), [pools])[0]?.message ?? '',
      /pool In \["pci-a", "gpu"\] lets Karpenter label each node/,
    );
  });

  it("a RuntimeClass listed for pci that selects one of pci's pools keeps runtimeclass-pattern; unlisted it is reported as pci's", () => {
    const listed = compilePolicy('listed', {
      ...labelPolicySpec(),
      nodeLabel: 'pool',
      nodeLabelValues: { pci: ['pci-a', 'pci-b'] },
      runtimeClasses: { pci: ['kata-pci'] },
    });
    const runtimeClass = (name: string): JsonObject => ({ metadata: { name }, scheduling: { nodeSelector: { pool: 'pci-b' } } });
    assert.deepEqual(runtimeClassFindings(runtimeClass('kata-pci'), [listed]), []);
    assert.match(
      runtimeClassFindings(runtimeClass('kata-fast'), [listed])[0]?.message ?? '',
      /selects the nodes of group "pci" \(pool=pci-b\)/,
    );
  });

  it('export refuses a policy with spec.nodeLabelValues rather than write a requirement of the group name', () => {
    const refused = recognizeTenancyPolicy(
      compilePolicy('p', {
        ...labelPolicySpec(),
        exempt: "namespaceObject.metadata.?labels['x'].orValue('') == 'true'",
        nodeLabelValues: { pci: ['pci-a'] },
      }),
    );
    assert.match('reason' in refused ? refused.reason : '', /^not exported: spec\.nodeLabelValues; /);
  });
});
