import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Namespace, Node, NodeSelectorTerm, Toleration } from '../../src/api/types.js';
import { createDedicatedNodes, violationsSpelledOut } from '../../src/plugins/dedicated-nodes.js';
import type { AdmissionAttributes, Denial, Operation, PluginContext } from '../../src/plugins/plugin.js';
import type { TenancyPolicy } from '../../src/tenancy/policy.js';
import { compilePolicy, labelPolicySpec, namespace, node, pod } from '../tenancy/tenancy-fixtures.js';

// --- cluster state --------------------------------------------------------------------------

const byLabel = compilePolicy('by-label');
const warnByLabel = compilePolicy('warn-by-label', { ...labelPolicySpec(), enforcement: 'Warn' });
const byPrefix = compilePolicy('by-prefix', {
  ...labelPolicySpec(),
  group: "namespaceObject.metadata.name.startsWith('team-') ? 'team-' + namespaceObject.metadata.name.split('-')[1] : ''",
  taint: { key: 'tenant', effect: 'NoSchedule' },
  nodeLabel: 'tenant',
});

const namespaces: Record<string, Namespace> = {
  ml: namespace('ml', { dedicated: 'gpu' }),
  web: namespace('web'),
  logging: namespace('logging', { 'tolerator.dev/node-infrastructure': 'true' }),
  'team-a-dev': namespace('team-a-dev', { dedicated: 'gpu' }),
};

const nodes: Node[] = [
  node('gpu-1', { dedicated: 'gpu' }, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]),
  node('team-b-1', { dedicated: 'team-b' }, [{ key: 'dedicated', value: 'team-b', effect: 'NoSchedule' }]),
  node('tainted-only-1', {}, [{ key: 'dedicated', value: 'team-c', effect: 'NoSchedule' }]),
  node('plain-1'),
];

const gpuToleration: Toleration = { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' };
const gpuRequirement = { key: 'dedicated', operator: 'In', values: ['gpu'] };
const termsKey = 'requiredDuringSchedulingIgnoredDuringExecution';

function context(ns: string | undefined, comparisonOperators = false, nodesKnown = true): PluginContext {
  return {
    gates: { ...defaultFeatureGates, TaintTolerationComparisonOperators: comparisonOperators },
    namespace: ns === undefined ? undefined : namespaces[ns],
    node: (name) => nodes.find((candidate) => candidate.metadata.name === name),
    nodesKnown,
    nodes: () => nodes,
  };
}

/** The kubelet of node gpu-1, the only kind of user whose mirror-annotated pods are mirror pods. */
const kubeletUser = { username: 'system:node:gpu-1', uid: '', groups: ['system:nodes', 'system:authenticated'], extra: {} };

function podAttributes(
  operation: Operation,
  object: JsonObject,
  oldObject?: JsonObject,
  ns = 'ml',
  userInfo?: AdmissionAttributes['userInfo'],
): AdmissionAttributes {
  return {
    ...(userInfo === undefined ? {} : { userInfo }),
    operation,
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subResource: '',
    namespace: ns,
    name: 'app',
    object,
    oldObject,
    dryRun: false,
  };
}

function daemonSet(podSpec: JsonObject, templateLabels: Record<string, string> = {}): JsonObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'agent', namespace: 'ml' },
    spec: {
      selector: { matchLabels: { app: 'agent' } },
      template: {
        metadata: { labels: { app: 'agent', ...templateLabels } },
        spec: { containers: [{ name: 'agent', image: 'agent:1' }], ...podSpec },
      },
    },
  };
}

function daemonSetAttributes(operation: Operation, object: JsonObject, oldObject?: JsonObject): AdmissionAttributes {
  return {
    ...podAttributes(operation, object, oldObject),
    kind: { group: 'apps', version: 'v1', kind: 'DaemonSet' },
    resource: { group: 'apps', version: 'v1', resource: 'daemonsets' },
    name: 'agent',
  };
}

function withRequired(terms: NodeSelectorTerm[], extra: JsonObject = {}): JsonObject {
  return { ...extra, affinity: { nodeAffinity: { [termsKey]: { nodeSelectorTerms: terms } } } };
}

/** A tenant pod of group gpu as the mutating side leaves it. */
function mutatedGpuPod(extra: JsonObject = {}, metadata: JsonObject = {}): JsonObject {
  return pod({ tolerations: [gpuToleration], ...withRequired([{ matchExpressions: [gpuRequirement] }]), ...extra }, metadata);
}

function specOf(object: JsonObject | undefined): JsonObject {
  return (object?.spec ?? {}) as JsonObject;
}

function requiredTermsOf(spec: JsonObject): unknown {
  const affinity = spec.affinity as { nodeAffinity?: Record<string, { nodeSelectorTerms?: unknown }> } | undefined;
  return affinity?.nodeAffinity?.[termsKey]?.nodeSelectorTerms;
}

function forbiddenMessage(denial: Denial | undefined): string {
  return denial?.reason === 'Forbidden' ? denial.message : '';
}

function plugin(...policies: TenancyPolicy[]): ReturnType<typeof createDedicatedNodes> {
  const set = { policies: policies.length === 0 ? [byLabel] : policies };
  return createDedicatedNodes(() => set);
}

// --- handles --------------------------------------------------------------------------------

describe('DedicatedNodes handles', () => {
  const rows: { name: string; given: AdmissionAttributes; want: boolean }[] = [
    { name: 'a pod CREATE is handled', given: podAttributes('CREATE', pod()), want: true },
    { name: 'a pod UPDATE is handled', given: podAttributes('UPDATE', pod(), pod()), want: true },
    { name: 'a pod DELETE is not handled', given: podAttributes('DELETE', pod()), want: false },
    { name: 'a pod subresource is not handled', given: { ...podAttributes('CREATE', pod()), subResource: 'binding' }, want: false },
    { name: 'a DaemonSet UPDATE is handled', given: daemonSetAttributes('UPDATE', daemonSet({}), daemonSet({})), want: true },
    {
      name: 'a Deployment is handled (its template is validated)',
      given: { ...daemonSetAttributes('CREATE', daemonSet({})), resource: { group: 'apps', version: 'v1', resource: 'deployments' } },
      want: true,
    },
    {
      name: 'a CronJob is handled (its template is validated)',
      given: { ...daemonSetAttributes('CREATE', daemonSet({})), resource: { group: 'batch', version: 'v1', resource: 'cronjobs' } },
      want: true,
    },
    {
      name: 'a ConfigMap is not handled',
      given: { ...daemonSetAttributes('CREATE', daemonSet({})), resource: { group: '', version: 'v1', resource: 'configmaps' } },
      want: false,
    },
    {
      name: 'a Deployment scale subresource is not handled',
      given: {
        ...daemonSetAttributes('UPDATE', daemonSet({})),
        resource: { group: 'apps', version: 'v1', resource: 'deployments' },
        subResource: 'scale',
      },
      want: false,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(plugin().handles(row.given), row.want);
    });
  }
});

// --- mutation -------------------------------------------------------------------------------

describe('DedicatedNodes admit on pod CREATE', () => {
  interface Want {
    readonly tolerations?: unknown;
    readonly terms?: unknown;
    readonly preferred?: unknown;
    readonly unchanged?: boolean;
    readonly denial?: RegExp;
    readonly decision?: string;
  }
  const preferred = [{ weight: 1, preference: { matchExpressions: [{ key: 'disk', operator: 'In', values: ['ssd'] }] } }];
  const rows: {
    name: string;
    given: { ns: string | undefined; pod: JsonObject; policies?: TenancyPolicy[]; userInfo?: AdmissionAttributes['userInfo'] };
    want: Want;
  }[] = [
    {
      name: 'a tenant pod with no affinity gets the toleration and one required term',
      given: { ns: 'ml', pod: pod() },
      want: { tolerations: [gpuToleration], terms: [{ matchExpressions: [gpuRequirement] }], decision: 'mutated' },
    },
    {
      name: 'a tenant pod with two ORed terms gets the requirement in both',
      given: {
        ns: 'ml',
        pod: pod(
          withRequired([
            { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
            { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
          ]),
        ),
      },
      want: {
        tolerations: [gpuToleration],
        terms: [
          { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }, gpuRequirement] },
          { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }, gpuRequirement] },
        ],
      },
    },
    {
      name: "a tenant DaemonSet pod's matchFields term keeps the field and gains the requirement",
      given: { ns: 'ml', pod: pod(withRequired([{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }] }])) },
      want: {
        terms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['node-1'] }], matchExpressions: [gpuRequirement] }],
      },
    },
    {
      name: 'a tenant pod with a preferred term keeps it and gains a required term',
      given: { ns: 'ml', pod: pod({ affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: preferred } } }) },
      want: { preferred, terms: [{ matchExpressions: [gpuRequirement] }] },
    },
    {
      name: 'a tenant pod keeps its own tolerations, the group toleration appended after them',
      given: { ns: 'ml', pod: pod({ tolerations: [{ key: 'x', operator: 'Exists' }] }) },
      want: { tolerations: [{ key: 'x', operator: 'Exists' }, gpuToleration] },
    },
    {
      name: 'a tenant pod already carrying the pair is returned as the same object',
      given: { ns: 'ml', pod: mutatedGpuPod() },
      want: { unchanged: true, decision: 'unchanged' },
    },
    {
      name: "a tenant pod preferring another group's nodes is denied: Karpenter provisioned a node of a general NodePool for it",
      given: {
        ns: 'ml',
        pod: pod({
          affinity: {
            nodeAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                { weight: 100, preference: { matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['team-b'] }] } },
              ],
            },
          },
        }),
      },
      want: {
        denial:
          /may only run on nodes labelled dedicated=gpu, but the pod asks for other nodes: spec\.affinity\.nodeAffinity\.preferredDuringSchedulingIgnoredDuringExecution\[0\]\.preference\.matchExpressions\[0\] dedicated In \[team-b\] excludes the namespace's group gpu \(a preference Karpenter would provision for outside the group\)/,
        decision: 'denied',
      },
    },
    {
      name: 'a tenant pod whose nodeSelector names another group is denied',
      given: { ns: 'ml', pod: pod({ nodeSelector: { dedicated: 'team-b' } }) },
      want: {
        denial:
          /may only run on nodes labelled dedicated=gpu, but the pod asks for other nodes: spec\.nodeSelector selects dedicated=team-b/,
        decision: 'denied',
      },
    },
    {
      name: 'a tenant pod with one term pinning another group among fine terms is denied',
      given: {
        ns: 'ml',
        pod: pod(
          withRequired([
            { matchExpressions: [{ key: 'zone', operator: 'Exists' }] },
            { matchExpressions: [{ key: 'dedicated', operator: 'NotIn', values: ['gpu'] }] },
          ]),
        ),
      },
      want: { denial: /nodeSelectorTerms\[1\]\.matchExpressions\[0\] dedicated NotIn \[gpu\] excludes the namespace's group gpu/ },
    },
    {
      name: 'an exempt tenant pod is left unchanged',
      given: { ns: 'ml', pod: pod({}, { labels: { 'tolerator.dev/exempt': 'true' } }) },
      want: { unchanged: true, decision: 'exempt' },
    },
    {
      name: "a kubelet's mirror pod is never mutated",
      given: { ns: 'ml', pod: pod({}, { annotations: { 'kubernetes.io/config.mirror': 'abc' } }), userInfo: kubeletUser },
      want: { unchanged: true },
    },
    {
      name: "a tenant's pod carrying the mirror annotation is mutated like any other",
      given: { ns: 'ml', pod: pod({}, { annotations: { 'kubernetes.io/config.mirror': 'abc' } }) },
      want: { tolerations: [gpuToleration], terms: [{ matchExpressions: [gpuRequirement] }], decision: 'mutated' },
    },
    {
      name: 'a user named system:node:<name> outside the group system:nodes is no kubelet: its mirror-annotated pod is mutated',
      given: {
        ns: 'ml',
        pod: pod({}, { annotations: { 'kubernetes.io/config.mirror': 'abc' } }),
        userInfo: { ...kubeletUser, groups: ['system:authenticated'] },
      },
      want: { tolerations: [gpuToleration], terms: [{ matchExpressions: [gpuRequirement] }], decision: 'mutated' },
    },
    {
      name: 'a pod of a namespace with no group is left unchanged',
      given: { ns: 'web', pod: pod() },
      want: { unchanged: true },
    },
    {
      name: 'a pod of an unknown namespace is left unchanged',
      given: { ns: undefined, pod: pod() },
      want: { unchanged: true },
    },
    {
      name: 'a pod of a namespace two policies put in different groups is denied, naming both',
      given: { ns: 'team-a-dev', pod: pod(), policies: [byLabel, byPrefix] },
      want: {
        denial:
          /namespace "team-a-dev" belongs to more than one dedicated-node group \(policy "by-label" gives group "gpu", policy "by-prefix" gives group "team-a"\)/,
        decision: 'conflict',
      },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const given = structuredClone(row.given.pod);
      const outcome = plugin(...(row.given.policies ?? [])).admit(
        given,
        podAttributes('CREATE', given, undefined, row.given.ns ?? 'ml', row.given.userInfo),
        context(row.given.ns),
      );
      assert.deepEqual(given, row.given.pod, 'the input is never modified');
      if (row.want.denial !== undefined) {
        assert.equal(outcome.denial?.reason, 'Forbidden');
        assert.match(forbiddenMessage(outcome.denial), row.want.denial);
      } else {
        assert.equal(outcome.denial, undefined);
      }
      if (row.want.unchanged === true) {
        assert.equal(outcome.object, given);
      }
      const spec = specOf(outcome.object);
      if (row.want.tolerations !== undefined) assert.deepEqual(spec.tolerations, row.want.tolerations);
      if (row.want.terms !== undefined) assert.deepEqual(requiredTermsOf(spec), row.want.terms);
      if (row.want.preferred !== undefined) {
        const nodeAffinity = (spec.affinity as { nodeAffinity: JsonObject }).nodeAffinity;
        assert.deepEqual(nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution, row.want.preferred);
      }
      if (row.want.decision !== undefined) assert.equal(outcome.auditAnnotations?.['dedicated-nodes-decision'], row.want.decision);
    });
  }

  it('records the policy, group and decision of a mutation in audit annotations', () => {
    const outcome = plugin().admit(pod(), podAttributes('CREATE', pod()), context('ml'));
    assert.deepEqual(outcome.auditAnnotations, {
      'dedicated-nodes-policy': 'by-label',
      'dedicated-nodes-group': 'gpu',
      'dedicated-nodes-decision': 'mutated',
    });
  });

  it('does nothing on pod UPDATE, where affinity is immutable', () => {
    const given = pod();
    assert.equal(plugin().admit(given, podAttributes('UPDATE', given, pod()), context('ml')).object, given);
  });

  it('under Warn, warns about a contradicting pod and leaves it unchanged', () => {
    const given = pod({ nodeSelector: { dedicated: 'team-b' } });
    const outcome = plugin(warnByLabel).admit(given, podAttributes('CREATE', given), context('ml'));
    assert.deepEqual(
      { object: outcome.object === given, denial: outcome.denial, decision: outcome.auditAnnotations?.['dedicated-nodes-decision'] },
      { object: true, denial: undefined, decision: 'warned' },
    );
    assert.match(outcome.warnings?.[0] ?? '', /^DedicatedNodes \(enforcement Warn, policy "warn-by-label"\): .*selects dedicated=team-b/);
  });

  it('reads the policies through the getter on every call, so a reload takes effect', () => {
    let set = { policies: [] as TenancyPolicy[] };
    const reloading = createDedicatedNodes(() => set);
    const given = pod();
    assert.equal(reloading.admit(given, podAttributes('CREATE', given), context('ml')).object, given);
    set = { policies: [byLabel] };
    assert.deepEqual(specOf(reloading.admit(given, podAttributes('CREATE', given), context('ml')).object).tolerations, [gpuToleration]);
  });

  it('throws "could not decide" when a policy expression fails', () => {
    const failing = compilePolicy('failing', { ...labelPolicySpec(), group: "namespaceObject.metadata.labels['missing']" });
    assert.throws(() => plugin(failing).admit(pod(), podAttributes('CREATE', pod()), context('ml')), /could not decide: policy "failing"/);
  });
});

describe('DedicatedNodes admit on DaemonSets', () => {
  it('mutates the template of a DaemonSet created in a tenant namespace', () => {
    const given = daemonSet({});
    const outcome = plugin().admit(given, daemonSetAttributes('CREATE', given), context('ml'));
    const template = (specOf(outcome.object).template ?? {}) as JsonObject;
    const templateSpec = (template.spec ?? {}) as JsonObject;
    assert.deepEqual(
      { tolerations: templateSpec.tolerations, terms: requiredTermsOf(templateSpec) },
      { tolerations: [gpuToleration], terms: [{ matchExpressions: [gpuRequirement] }] },
    );
    assert.equal(template.metadata, (specOf(given).template as JsonObject).metadata, 'the template metadata is the same object');
  });

  it('mutates the template on a DaemonSet UPDATE too', () => {
    const given = daemonSet({ tolerations: [{ key: 'x', operator: 'Exists' }] });
    const outcome = plugin().admit(given, daemonSetAttributes('UPDATE', given, daemonSet({})), context('ml'));
    const templateSpec = ((specOf(outcome.object).template as JsonObject).spec ?? {}) as JsonObject;
    assert.deepEqual(templateSpec.tolerations, [{ key: 'x', operator: 'Exists' }, gpuToleration]);
  });

  it('leaves a DaemonSet whose template is exempt unchanged', () => {
    const given = daemonSet({}, { 'tolerator.dev/exempt': 'true' });
    assert.equal(plugin().admit(given, daemonSetAttributes('CREATE', given), context('ml')).object, given);
  });
});

// --- validation -----------------------------------------------------------------------------

describe('DedicatedNodes validate', () => {
  interface Given {
    readonly ns?: string;
    readonly pod: JsonObject;
    readonly operation?: Operation;
    readonly oldPod?: JsonObject;
    readonly policies?: TenancyPolicy[];
    readonly comparisonOperators?: boolean;
    readonly nodesKnown?: boolean;
    readonly userInfo?: AdmissionAttributes['userInfo'];
  }
  interface Want {
    readonly denial?: RegExp;
    readonly warning?: RegExp;
    readonly decision?: string;
    readonly infrastructure?: RegExp;
  }
  const rows: { name: string; given: Given; want: Want }[] = [
    // Tenant pairs.
    {
      name: 'a tenant pod that skipped mutation is denied, naming the missing toleration and affinity',
      given: { pod: pod() },
      want: {
        denial:
          /must tolerate the taint dedicated=gpu:NoSchedule: spec\.tolerations lacks .*; .*must require dedicated In \[gpu\] in every required node affinity term: missing in spec\.affinity\.nodeAffinity\.requiredDuringSchedulingIgnoredDuringExecution$/,
        decision: 'denied',
      },
    },
    { name: 'the same pod after mutation is allowed', given: { pod: mutatedGpuPod() }, want: { decision: 'allowed' } },
    {
      name: 'a tenant pod missing the requirement in one of two terms is denied naming that term',
      given: {
        pod: pod({
          tolerations: [gpuToleration],
          ...withRequired([{ matchExpressions: [gpuRequirement] }, { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }]),
        }),
      },
      want: { denial: /missing in spec\.affinity\.nodeAffinity\.requiredDuringSchedulingIgnoredDuringExecution\.nodeSelectorTerms\[1\]$/ },
    },
    {
      name: 'a tenant pod whose group toleration has an empty effect still tolerates its taint',
      given: { pod: mutatedGpuPod({ tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu' }] }) },
      want: { decision: 'allowed' },
    },
    {
      name: 'an exempt tenant pod without the pair is allowed',
      given: { pod: pod({}, { labels: { 'tolerator.dev/exempt': 'true' } }) },
      want: { decision: 'exempt' },
    },
    {
      name: "a kubelet's mirror pod pinned to another group node is allowed",
      given: {
        ns: 'web',
        pod: pod({ nodeName: 'gpu-1' }, { annotations: { 'kubernetes.io/config.mirror': 'abc' } }),
        userInfo: kubeletUser,
      },
      want: {},
    },
    {
      name: "a tenant's pod carrying the mirror annotation, pinned to another group node, is denied",
      given: {
        ns: 'web',
        pod: pod({ nodeName: 'gpu-1' }, { annotations: { 'kubernetes.io/config.mirror': 'abc' } }),
        userInfo: { ...kubeletUser, username: 'alice' },
      },
      want: { denial: /spec\.nodeName "gpu-1" is a node of group "gpu"/ },
    },
    {
      name: 'a user named system:node:<name> outside the group system:nodes is no kubelet: its mirror-annotated pod on another group node is denied',
      given: {
        ns: 'web',
        pod: pod({ nodeName: 'gpu-1' }, { annotations: { 'kubernetes.io/config.mirror': 'abc' } }),
        userInfo: { ...kubeletUser, groups: ['system:authenticated'] },
      },
      want: { denial: /spec\.nodeName "gpu-1" is a node of group "gpu"/ },
    },
    { name: 'a pod of a namespace with no group needs no pair', given: { ns: 'web', pod: pod() }, want: { decision: 'allowed' } },

    // Foreign tolerations.
    {
      name: 'a tenant pod with an Exists toleration on the dedicated key is denied',
      given: { pod: mutatedGpuPod({ tolerations: [gpuToleration, { key: 'dedicated', operator: 'Exists' }] }) },
      want: {
        denial:
          /^spec\.tolerations\[1\] tolerates the dedicated taint of every group \(dedicated=<group>:NoSchedule, policy "by-label"\); namespace "ml" belongs to group "gpu", and only an infrastructure namespace may reach other groups' nodes$/,
      },
    },
    {
      name: 'a non-tenant pod with an Exists toleration on the dedicated key is denied',
      given: { ns: 'web', pod: pod({ tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }] }) },
      want: { denial: /spec\.tolerations\[0\] tolerates the dedicated taint of every group .*namespace "web" belongs to no group/ },
    },
    {
      name: 'a non-tenant pod with an empty-key Exists toleration is denied',
      given: { ns: 'web', pod: pod({ tolerations: [{ operator: 'Exists' }] }) },
      want: { denial: /spec\.tolerations\[0\] tolerates the dedicated taint of every group/ },
    },
    {
      name: 'a non-tenant pod with an empty-key Exists toleration for the taint effect is denied',
      given: { ns: 'web', pod: pod({ tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }] }) },
      want: { denial: /spec\.tolerations\[0\]/ },
    },
    {
      name: 'a non-tenant pod with an empty-key Exists toleration for another effect is allowed',
      given: { ns: 'web', pod: pod({ tolerations: [{ operator: 'Exists', effect: 'NoExecute' }] }) },
      want: { decision: 'allowed' },
    },
    {
      name: "a non-tenant pod tolerating a group's taint by value is denied",
      given: { ns: 'web', pod: pod({ tolerations: [gpuToleration] }) },
      want: { denial: /tolerates the dedicated taint of group "gpu"/ },
    },
    {
      name: "a tenant pod tolerating another group's taint by value is denied",
      given: {
        pod: mutatedGpuPod({
          tolerations: [gpuToleration, { key: 'dedicated', operator: 'Equal', value: 'team-b', effect: 'NoSchedule' }],
        }),
      },
      want: { denial: /spec\.tolerations\[1\] tolerates the dedicated taint of group "team-b"/ },
    },
    {
      name: 'an exempt pod may still not tolerate another group',
      given: { pod: pod({ tolerations: [{ key: 'dedicated', operator: 'Exists' }] }, { labels: { 'tolerator.dev/exempt': 'true' } }) },
      want: { denial: /tolerates the dedicated taint of every group/ },
    },
    {
      name: 'a Gt toleration on the key is foreign when the comparison gate is on',
      given: { ns: 'web', pod: pod({ tolerations: [{ key: 'dedicated', operator: 'Gt', value: '5' }] }), comparisonOperators: true },
      want: { denial: /a numeric range of groups/ },
    },
    {
      // kube-scheduler reads its own gate: with the API server's off and the scheduler's on, the
      // toleration reaches every group named by an integer above 5.
      name: 'a Gt toleration on the key is foreign when the comparison gate is off too',
      given: { ns: 'web', pod: pod({ tolerations: [{ key: 'dedicated', operator: 'Gt', value: '5' }] }) },
      want: {
        denial:
          /spec\.tolerations\[0\] tolerates the dedicated taints of a numeric range of groups \(Gt: .*whatever the API server's gate\)/,
      },
    },
    {
      name: 'dedicated=2024: a ratcheted UPDATE adding {key: dedicated, operator: Gt, value: "0"} is denied with the API server\'s gate off',
      given: {
        ns: 'web',
        operation: 'UPDATE',
        // The old pod already uses Gt (on another key), so the API server's ratchet lets the UPDATE add one.
        oldPod: pod({ tolerations: [{ key: 'example.com/generation', operator: 'Gt', value: '1' }] }),
        pod: pod({
          tolerations: [
            { key: 'example.com/generation', operator: 'Gt', value: '1' },
            { key: 'dedicated', operator: 'Gt', value: '0' },
          ],
        }),
      },
      want: { denial: /^spec\.tolerations\[1\] tolerates the dedicated taints of a numeric range of groups/, decision: 'denied' },
    },
    {
      name: "a Gt toleration on another key is nobody's business, under either gate",
      given: { ns: 'web', pod: pod({ tolerations: [{ key: 'example.com/generation', operator: 'Gt', value: '5' }] }) },
      want: { decision: 'allowed' },
    },
    {
      name: 'an infrastructure namespace pod tolerating every group is allowed and audited',
      given: { ns: 'logging', pod: pod({ tolerations: [{ operator: 'Exists' }] }) },
      want: {
        decision: 'allowed',
        infrastructure:
          /^allowed for an infrastructure namespace: by-label: spec\.tolerations\[0\] tolerates the dedicated taint of every group/,
      },
    },

    // nodeName.
    {
      name: "a non-tenant pod pinned to another group's node is denied",
      given: { ns: 'web', pod: pod({ nodeName: 'gpu-1' }) },
      want: { denial: /^spec\.nodeName "gpu-1" is a node of group "gpu" \(policy "by-label"\); namespace "web" belongs to no group/ },
    },
    {
      name: 'a non-tenant pod pinned to a node carrying only the dedicated taint is denied',
      given: { ns: 'web', pod: pod({ nodeName: 'tainted-only-1' }) },
      want: { denial: /spec\.nodeName "tainted-only-1" is a node of group "team-c"/ },
    },
    {
      name: "a tenant pod pinned to another group's node is denied",
      given: { pod: mutatedGpuPod({ nodeName: 'team-b-1' }) },
      want: { denial: /spec\.nodeName "team-b-1" is a node of group "team-b"/ },
    },
    {
      name: 'a tenant pod pinned to a node outside its group is denied',
      given: { pod: mutatedGpuPod({ nodeName: 'plain-1' }) },
      want: { denial: /spec\.nodeName "plain-1" is not a node of group "gpu"/ },
    },
    {
      name: 'a tenant pod pinned to a node of its group is allowed',
      given: { pod: mutatedGpuPod({ nodeName: 'gpu-1' }) },
      want: { decision: 'allowed' },
    },
    {
      name: 'a non-tenant pod pinned to an ungrouped node is allowed',
      given: { ns: 'web', pod: pod({ nodeName: 'plain-1' }) },
      want: { decision: 'allowed' },
    },
    {
      name: 'a pod pinned to a node that does not exist is denied, naming the node',
      given: { ns: 'web', pod: pod({ nodeName: 'new-node' }) },
      want: {
        denial: /^spec\.nodeName "new-node" names no existing node; its dedicated-node group cannot be determined/,
        decision: 'denied',
      },
    },
    {
      name: 'a tenant pod pinned to a node that does not exist is denied',
      given: { pod: mutatedGpuPod({ nodeName: 'new-node' }) },
      want: { denial: /spec\.nodeName "new-node" names no existing node/ },
    },
    {
      name: 'an exempt pod pinned to a node that does not exist is denied',
      given: { pod: mutatedGpuPod({ nodeName: 'new-node' }, { labels: { 'tolerator.dev/exempt': 'true' } }) },
      want: { denial: /spec\.nodeName "new-node" names no existing node/ },
    },
    {
      name: 'an infrastructure namespace pod pinned to a node that does not exist is allowed and audited',
      given: { ns: 'logging', pod: pod({ nodeName: 'new-node' }) },
      want: { decision: 'allowed', infrastructure: /spec\.nodeName "new-node" names no existing node/ },
    },
    {
      name: 'offline, without any cluster state, a pod pinned to an unknown node is allowed with a warning',
      given: { ns: 'web', pod: pod({ nodeName: 'new-node' }), nodesKnown: false },
      want: {
        decision: 'allowed',
        warning: /node "new-node" named by spec\.nodeName could not be checked: no cluster state holds the cluster's nodes/,
      },
    },
    {
      name: "an infrastructure namespace pod pinned to a group's node is allowed",
      given: { ns: 'logging', pod: pod({ nodeName: 'gpu-1' }) },
      want: { decision: 'allowed', infrastructure: /spec\.nodeName "gpu-1" is a node of group "gpu"/ },
    },

    // UPDATE.
    {
      name: 'an UPDATE adding a foreign toleration is denied',
      given: { ns: 'web', operation: 'UPDATE', oldPod: pod(), pod: pod({ tolerations: [{ key: 'dedicated', operator: 'Exists' }] }) },
      want: { denial: /spec\.tolerations\[0\] tolerates the dedicated taint of every group/ },
    },
    {
      name: 'an UPDATE keeping a foreign toleration the pod already had is allowed',
      given: {
        ns: 'web',
        operation: 'UPDATE',
        oldPod: pod({ tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
        pod: pod({ tolerations: [{ key: 'dedicated', operator: 'Exists' }] }, { labels: { new: 'label' } }),
      },
      want: { decision: 'allowed' },
    },
    {
      name: 'an UPDATE of a tenant pod created before the policy, without the pair, is allowed',
      given: { operation: 'UPDATE', oldPod: pod(), pod: pod({}, { labels: { new: 'label' } }) },
      want: { decision: 'allowed' },
    },
    {
      name: 'an UPDATE of a pod already bound to another group node is allowed',
      given: { ns: 'web', operation: 'UPDATE', oldPod: pod({ nodeName: 'gpu-1' }), pod: pod({ nodeName: 'gpu-1' }) },
      want: { decision: 'allowed' },
    },

    // Enforcement and configuration.
    {
      name: 'under Warn a tenant pod without the pair is allowed with warnings',
      given: { pod: pod(), policies: [warnByLabel] },
      want: {
        decision: 'warned',
        warning:
          /^DedicatedNodes \(enforcement Warn, policy "warn-by-label"\): pods in namespace "ml" \(group "gpu", policy "warn-by-label"\) must tolerate/,
      },
    },
    {
      name: 'under Warn a foreign toleration is allowed with a warning',
      given: { ns: 'web', pod: pod({ tolerations: [{ operator: 'Exists' }] }), policies: [warnByLabel] },
      want: { decision: 'warned', warning: /tolerates the dedicated taint of every group/ },
    },
    {
      name: 'a pod of a namespace two policies put in different groups is denied, naming both',
      given: { ns: 'team-a-dev', pod: mutatedGpuPod(), policies: [byLabel, byPrefix] },
      want: { denial: /policy "by-label" gives group "gpu", policy "by-prefix" gives group "team-a"/, decision: 'conflict' },
    },
    {
      name: 'an UPDATE of a pod in a namespace two policies put in different groups is allowed with a warning',
      given: {
        ns: 'team-a-dev',
        operation: 'UPDATE',
        oldPod: pod(),
        pod: pod({}, { labels: { release: 'canary' } }),
        policies: [byLabel, byPrefix],
      },
      want: { warning: /policy "by-label" gives group "gpu", policy "by-prefix" gives group "team-a"/, decision: 'conflict' },
    },
    {
      name: 'a conflict never excuses a new toleration: an UPDATE adding one of either group is denied',
      given: {
        ns: 'team-a-dev',
        operation: 'UPDATE',
        oldPod: pod(),
        pod: pod({ tolerations: [gpuToleration] }),
        policies: [byLabel, byPrefix],
      },
      want: {
        denial:
          /^spec\.tolerations\[0\] tolerates the dedicated taint of group "gpu" .*namespace "team-a-dev" is claimed by more than one group, so it is judged as belonging to none/,
        warning: /belongs to more than one dedicated-node group/,
        decision: 'denied',
      },
    },
    {
      name: "a conflict never excuses a new toleration: an UPDATE adding the other group's is denied",
      given: {
        ns: 'team-a-dev',
        operation: 'UPDATE',
        oldPod: pod(),
        pod: pod({ tolerations: [{ key: 'tenant', operator: 'Equal', value: 'team-a', effect: 'NoSchedule' }] }),
        policies: [byLabel, byPrefix],
      },
      want: {
        denial: /tolerates the dedicated taint of group "team-a" .*policy "by-prefix"/,
        warning: /belongs to more than one dedicated-node group/,
      },
    },
    {
      name: 'a conflict keeps a toleration the pod already had: an UPDATE that only relabels is allowed',
      given: {
        ns: 'team-a-dev',
        operation: 'UPDATE',
        oldPod: pod({ tolerations: [gpuToleration] }),
        pod: pod({ tolerations: [gpuToleration] }, { labels: { release: 'canary' } }),
        policies: [byLabel, byPrefix],
      },
      want: { warning: /belongs to more than one dedicated-node group/, decision: 'conflict' },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const { given } = row;
      const attributes = podAttributes(given.operation ?? 'CREATE', given.pod, given.oldPod, given.ns ?? 'ml', given.userInfo);
      const outcome = plugin(...(given.policies ?? [])).validate(
        given.pod,
        attributes,
        context(given.ns ?? 'ml', given.comparisonOperators, given.nodesKnown),
      );
      if (row.want.denial === undefined) {
        assert.equal(outcome.denial, undefined, forbiddenMessage(outcome.denial));
      } else {
        assert.equal(outcome.denial?.reason, 'Forbidden');
        assert.match(forbiddenMessage(outcome.denial), row.want.denial);
      }
      if (row.want.warning === undefined) {
        assert.equal(outcome.warnings, undefined);
      } else {
        assert.ok(
          outcome.warnings?.some((warning) => row.want.warning?.test(warning)),
          (outcome.warnings ?? []).join('\n'),
        );
      }
      if (row.want.decision !== undefined) assert.equal(outcome.auditAnnotations?.['dedicated-nodes-decision'], row.want.decision);
      if (row.want.infrastructure !== undefined)
        assert.match(outcome.auditAnnotations?.['dedicated-nodes-infrastructure'] ?? '', row.want.infrastructure);
    });
  }

  it('allows what its own mutation produced for every tenant pod shape of the admit table', () => {
    const shapes = [
      pod(),
      pod(
        withRequired([
          { matchExpressions: [{ key: 'zone', operator: 'Exists' }] },
          { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n'] }] },
        ]),
      ),
    ];
    for (const shape of shapes) {
      const mutated = plugin().admit(shape, podAttributes('CREATE', shape), context('ml')).object ?? {};
      assert.equal(plugin().validate(mutated, podAttributes('CREATE', mutated), context('ml')).denial, undefined);
    }
  });
});

describe('DedicatedNodes validate on DaemonSets', () => {
  const rows: { name: string; given: { object: JsonObject; operation: Operation; old?: JsonObject }; want: RegExp | undefined }[] = [
    {
      name: 'a DaemonSet template without the pair is denied on CREATE',
      given: { object: daemonSet({}), operation: 'CREATE' },
      want: /DaemonSet pod templates in namespace "ml" .* must tolerate .*spec\.template\.spec\.tolerations lacks/,
    },
    {
      name: 'a DaemonSet UPDATE changing the template without the pair is denied',
      given: { object: daemonSet({ hostNetwork: true }), operation: 'UPDATE', old: daemonSet({}) },
      want: /must require dedicated In \[gpu\]/,
    },
    {
      name: 'a DaemonSet UPDATE leaving the template alone is allowed',
      given: { object: { ...daemonSet({}), metadata: { name: 'agent', finalizers: ['x'] } }, operation: 'UPDATE', old: daemonSet({}) },
      want: undefined,
    },
    {
      name: 'a DaemonSet whose template tolerates every group is denied',
      given: { object: daemonSet({ tolerations: [{ operator: 'Exists' }] }, { 'tolerator.dev/exempt': 'true' }), operation: 'CREATE' },
      want: /spec\.template\.spec\.tolerations\[0\] tolerates the dedicated taint of every group/,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const outcome = plugin().validate(
        row.given.object,
        daemonSetAttributes(row.given.operation, row.given.object, row.given.old),
        context('ml'),
      );
      if (row.want === undefined) {
        assert.equal(outcome.denial, undefined);
      } else {
        assert.match(forbiddenMessage(outcome.denial), row.want);
      }
    });
  }
});

describe('DedicatedNodes on every workload with a pod template', () => {
  /** Each kind that carries a pod template, with where the template sits (src/api/resource-kinds.ts). */
  const workloadKinds: { kind: string; group: string; resource: string; templatePath: readonly string[] }[] = [
    { kind: 'Deployment', group: 'apps', resource: 'deployments', templatePath: ['spec', 'template'] },
    { kind: 'ReplicaSet', group: 'apps', resource: 'replicasets', templatePath: ['spec', 'template'] },
    { kind: 'StatefulSet', group: 'apps', resource: 'statefulsets', templatePath: ['spec', 'template'] },
    { kind: 'DaemonSet', group: 'apps', resource: 'daemonsets', templatePath: ['spec', 'template'] },
    { kind: 'Job', group: 'batch', resource: 'jobs', templatePath: ['spec', 'template'] },
    { kind: 'CronJob', group: 'batch', resource: 'cronjobs', templatePath: ['spec', 'jobTemplate', 'spec', 'template'] },
    { kind: 'ReplicationController', group: '', resource: 'replicationcontrollers', templatePath: ['spec', 'template'] },
    { kind: 'PodTemplate', group: '', resource: 'podtemplates', templatePath: ['template'] },
  ];

  function workload(kind: (typeof workloadKinds)[number], podSpec: JsonObject, ns: string): JsonObject {
    let value: JsonObject = { metadata: { labels: { app: 'w' } }, spec: { containers: [{ name: 'c', image: 'c:1' }], ...podSpec } };
    for (const field of [...kind.templatePath].reverse()) value = { [field]: value };
    return { apiVersion: kind.group === '' ? 'v1' : `${kind.group}/v1`, kind: kind.kind, metadata: { name: 'w', namespace: ns }, ...value };
  }

  function attributesFor(
    kind: (typeof workloadKinds)[number],
    operation: Operation,
    object: JsonObject,
    ns: string,
    oldObject?: JsonObject,
  ): AdmissionAttributes {
    return {
      ...podAttributes(operation, object, oldObject, ns),
      kind: { group: kind.group, version: 'v1', kind: kind.kind },
      resource: { group: kind.group, version: 'v1', resource: kind.resource },
      name: 'w',
    };
  }

  for (const kind of workloadKinds) {
    const specPath = [...kind.templatePath, 'spec'].join('.').replaceAll('.', '\\.');
    const rows: {
      name: string;
      ns: string;
      podSpec: JsonObject;
      operation?: Operation;
      oldPodSpec?: JsonObject;
      want: RegExp | undefined;
    }[] = [
      {
        name: "a template outside every group tolerating a group's taint is denied, with the template's path",
        ns: 'web',
        podSpec: { tolerations: [gpuToleration] },
        want: new RegExp(`^${specPath}\\.tolerations\\[0\\] tolerates the dedicated taint of group "gpu"`),
      },
      {
        name: "a template pinned to another group's node is denied",
        ns: 'web',
        podSpec: { nodeName: 'gpu-1' },
        want: new RegExp(`^${specPath}\\.nodeName "gpu-1" is a node of group "gpu"`),
      },
      {
        name: 'a template pinned to a node that does not exist is denied',
        ns: 'web',
        podSpec: { nodeName: 'node-to-come' },
        want: new RegExp(`^${specPath}\\.nodeName "node-to-come" names no existing node`),
      },
      {
        name: "a tenant template asking for another group's nodes is denied",
        ns: 'ml',
        podSpec: { nodeSelector: { dedicated: 'team-b' } },
        want: /may only run on nodes labelled dedicated=gpu, but the pod asks for other nodes/,
      },
      {
        name: 'a tenant template pinned to a node outside its group is denied',
        ns: 'ml',
        podSpec: { nodeName: 'plain-1' },
        want: /nodeName "plain-1" is not a node of group "gpu"/,
      },
      {
        name:
          kind.kind === 'DaemonSet'
            ? 'a tenant DaemonSet template without the pair is denied (the mutating side gives it the pair)'
            : 'a tenant template without the pair is allowed (its pods get the pair when they are created)',
        ns: 'ml',
        podSpec: {},
        want: kind.kind === 'DaemonSet' ? /must tolerate the taint dedicated=gpu:NoSchedule/ : undefined,
      },
      {
        name: 'an UPDATE leaving a foreign template alone (a scale, a label) is allowed',
        ns: 'web',
        podSpec: { tolerations: [gpuToleration] },
        operation: 'UPDATE',
        oldPodSpec: { tolerations: [gpuToleration] },
        want: undefined,
      },
      {
        name: 'an UPDATE adding a foreign toleration to the template is denied',
        ns: 'web',
        podSpec: { tolerations: [gpuToleration] },
        operation: 'UPDATE',
        oldPodSpec: {},
        want: /tolerates the dedicated taint of group "gpu"/,
      },
      {
        name: "an UPDATE pinning the template to another group's node is denied",
        ns: 'web',
        podSpec: { nodeName: 'gpu-1' },
        operation: 'UPDATE',
        oldPodSpec: {},
        want: /nodeName "gpu-1" is a node of group "gpu"/,
      },
    ];
    for (const row of rows) {
      it(`${kind.kind}: ${row.name}`, () => {
        const object = workload(kind, row.podSpec, row.ns);
        const oldObject = row.oldPodSpec === undefined ? undefined : workload(kind, row.oldPodSpec, row.ns);
        const outcome = plugin().validate(
          object,
          attributesFor(kind, row.operation ?? 'CREATE', object, row.ns, oldObject),
          context(row.ns),
        );
        if (row.want === undefined) {
          assert.equal(outcome.denial, undefined, forbiddenMessage(outcome.denial));
        } else {
          assert.equal(outcome.denial?.reason, 'Forbidden');
          assert.match(forbiddenMessage(outcome.denial), row.want);
        }
      });
    }
    it(`${kind.kind}: the mutating side ${kind.kind === 'DaemonSet' ? 'gives the tenant template the pair' : 'leaves the template to its pods'}`, () => {
      const object = workload(kind, {}, 'ml');
      const outcome = plugin().admit(object, attributesFor(kind, 'CREATE', object, 'ml'), context('ml'));
      if (kind.kind === 'DaemonSet') {
        assert.notEqual(outcome.object, object);
      } else {
        assert.equal(outcome.object, object);
      }
    });
  }
});

describe('DedicatedNodes on workload updates in a namespace two policies place in different groups', () => {
  const deployment = (podSpec: JsonObject, finalizers: string[] = []): JsonObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'team-a-dev', finalizers },
    spec: {
      replicas: 3,
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'c:1' }], ...podSpec } },
    },
  });
  const attributes = (object: JsonObject, oldObject: JsonObject): AdmissionAttributes => ({
    ...podAttributes('UPDATE', object, oldObject, 'team-a-dev'),
    kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
    resource: { group: 'apps', version: 'v1', resource: 'deployments' },
    name: 'web',
  });
  const rows: { name: string; object: JsonObject; oldObject: JsonObject; want: RegExp | undefined }[] = [
    {
      name: "an update that leaves the template alone (the garbage collector removing a finalizer) is allowed with the conflict's warning",
      object: deployment({}),
      oldObject: deployment({}, ['foregroundDeletion']),
      want: undefined,
    },
    {
      name: 'an update that changes the template is denied, as a CREATE is',
      object: deployment({ hostNetwork: true }),
      oldObject: deployment({}),
      want: /belongs to more than one dedicated-node group/,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const outcome = plugin(byLabel, byPrefix).validate(row.object, attributes(row.object, row.oldObject), context('team-a-dev'));
      if (row.want === undefined) {
        assert.equal(outcome.denial, undefined, forbiddenMessage(outcome.denial));
        assert.ok(outcome.warnings?.some((warning) => /belongs to more than one dedicated-node group/.test(warning)));
        assert.equal(outcome.auditAnnotations?.['dedicated-nodes-decision'], 'conflict');
      } else {
        assert.match(forbiddenMessage(outcome.denial), row.want);
      }
    });
  }
});

describe('DedicatedNodes gives CEL the whole admission request as `request`', () => {
  const exemptFor = (expression: string): TenancyPolicy => compilePolicy('by-user', { ...labelPolicySpec(), exempt: expression });
  const userInfo = {
    username: 'alice',
    uid: 'u-1',
    groups: ['platform-admins', 'system:authenticated'],
    extra: { 'scopes.example.com': ['a', 'b'] },
  };
  const rows: { name: string; expression: string; given: Partial<AdmissionAttributes>; want: string }[] = [
    {
      name: "request.userInfo.groups (the requesting user's groups)",
      expression: "'platform-admins' in request.userInfo.groups",
      given: { userInfo },
      want: 'exempt',
    },
    { name: 'request.userInfo.username', expression: "request.userInfo.username == 'alice'", given: { userInfo }, want: 'exempt' },
    {
      name: 'request.userInfo.extra',
      expression: "request.userInfo.extra['scopes.example.com'].exists(s, s == 'b')",
      given: { userInfo },
      want: 'exempt',
    },
    {
      name: 'request.requestResource from the envelope',
      expression: "request.requestResource.resource == 'pods'",
      given: { envelope: { requestResource: { group: '', version: 'v1', resource: 'pods' } } },
      want: 'exempt',
    },
    {
      name: 'an offline request as an anonymous user with no groups',
      expression: "'platform-admins' in request.userInfo.groups",
      given: {},
      want: 'allowed',
    },
  ];
  for (const row of rows) {
    it(`reads ${row.name}`, () => {
      const object = mutatedGpuPod();
      const attributes = { ...podAttributes('CREATE', object), ...row.given };
      const outcome = plugin(exemptFor(row.expression)).validate(object, attributes, context('ml'));
      assert.equal(outcome.denial, undefined);
      assert.equal(outcome.auditAnnotations?.['dedicated-nodes-decision'], row.want);
    });
  }
});

describe('DedicatedNodes keeps its messages bounded whatever the number of violations', () => {
  const foreign = (count: number): JsonObject =>
    pod({
      tolerations: Array.from({ length: count }, (_, i) => ({ key: 'dedicated', operator: 'Equal', value: `g${i}`, effect: 'NoSchedule' })),
    });

  it(`a denial spells out ${violationsSpelledOut} violations and counts the rest`, () => {
    const outcome = plugin().validate(foreign(500), podAttributes('CREATE', foreign(500), undefined, 'web'), context('web'));
    const message = forbiddenMessage(outcome.denial);
    assert.equal(message.match(/tolerates the dedicated taint of group/g)?.length, violationsSpelledOut);
    assert.match(message, /; and 490 more violations of the same kinds$/);
  });

  it(`under Warn, ${violationsSpelledOut} warnings and one that counts the rest`, () => {
    const outcome = plugin(warnByLabel).validate(foreign(500), podAttributes('CREATE', foreign(500), undefined, 'web'), context('web'));
    assert.equal(outcome.denial, undefined);
    assert.equal(outcome.warnings?.length, violationsSpelledOut + 1);
    assert.equal(outcome.warnings.at(-1), 'DedicatedNodes (enforcement Warn): and 490 more violations of the same kinds');
  });

  it('a denial with fewer violations lists them all, with no count', () => {
    const outcome = plugin().validate(foreign(3), podAttributes('CREATE', foreign(3), undefined, 'web'), context('web'));
    assert.equal(forbiddenMessage(outcome.denial).match(/tolerates the dedicated taint of group/g)?.length, 3);
    assert.doesNotMatch(forbiddenMessage(outcome.denial), /more violations/);
  });
});

// --- templates are their controllers' pods ----------------------------------------------------

describe("DedicatedNodes: a workload's template is judged as its controller's pods will be, not as its writer", () => {
  // The shipped prefix policy's exemption: pods that a member of platform-admins creates itself.
  const exemptsAdmins = compilePolicy('exempts-admins', { ...labelPolicySpec(), exempt: "'platform-admins' in request.userInfo.groups" });
  const admin = { username: 'pat', uid: '', groups: ['platform-admins', 'system:authenticated'], extra: {} };

  it('a pod a platform admin creates itself is exempt', () => {
    const given = pod({ nodeSelector: { dedicated: 'team-b' } });
    const outcome = createDedicatedNodes(() => ({ policies: [exemptsAdmins] })).admit(
      given,
      podAttributes('CREATE', given, undefined, 'ml', admin),
      context('ml'),
    );
    assert.equal(outcome.object, given);
    assert.equal(outcome.auditAnnotations?.['dedicated-nodes-decision'], 'exempt');
  });

  it("a platform admin's DaemonSet template gets the pair: the DaemonSet controller's pods are not exempt", () => {
    const given = daemonSet({});
    const outcome = createDedicatedNodes(() => ({ policies: [exemptsAdmins] })).admit(
      given,
      { ...daemonSetAttributes('CREATE', given), userInfo: admin },
      context('ml'),
    );
    const templateSpec = ((specOf(outcome.object).template as JsonObject).spec ?? {}) as JsonObject;
    assert.deepEqual(
      { tolerations: templateSpec.tolerations, terms: requiredTermsOf(templateSpec) },
      { tolerations: [gpuToleration], terms: [{ matchExpressions: [gpuRequirement] }] },
    );
  });

  it("a platform admin's Deployment asking for another group's nodes is denied: the ReplicaSet controller's pods would be", () => {
    const given: JsonObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'w', namespace: 'ml' },
      spec: { template: { metadata: {}, spec: { containers: [{ name: 'c', image: 'c:1' }], nodeSelector: { dedicated: 'team-b' } } } },
    };
    const attributes: AdmissionAttributes = {
      ...podAttributes('CREATE', given, undefined, 'ml', admin),
      kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      resource: { group: 'apps', version: 'v1', resource: 'deployments' },
      name: 'w',
    };
    const outcome = createDedicatedNodes(() => ({ policies: [exemptsAdmins] })).validate(given, attributes, context('ml'));
    assert.match(
      forbiddenMessage(outcome.denial),
      /^Deployment pod templates in namespace "ml" \(group "gpu", policy "exempts-admins"\) may only run on nodes labelled dedicated=gpu, but the pod asks for other nodes: spec\.template\.spec\.nodeSelector selects dedicated=team-b, not the namespace's group gpu$/,
    );
  });
});

describe('DedicatedNodes judges a template as the pod its controller creates', () => {
  // The policy's exemption reads what only the controller writes: its owner reference.
  const exemptDaemonPods = compilePolicy('daemon-exempt', {
    ...labelPolicySpec(),
    exempt: "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(o, o.kind == 'DaemonSet' && o.controller)",
  });
  const daemonPod = pod({}, { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent', uid: 'u', controller: true }] });

  it('exempts the DaemonSet pod and the DaemonSet template alike', () => {
    const forPod = plugin(exemptDaemonPods).validate(daemonPod, podAttributes('CREATE', daemonPod), context('ml'));
    const template = daemonSet({});
    const forTemplate = plugin(exemptDaemonPods).validate(template, daemonSetAttributes('CREATE', template), context('ml'));
    assert.equal(forPod.auditAnnotations?.['dedicated-nodes-decision'], 'exempt');
    assert.equal(forTemplate.auditAnnotations?.['dedicated-nodes-decision'], 'exempt');
  });

  it("sees the workload's namespace, not one written in the template", () => {
    const inWeb = compilePolicy('web-exempt', { ...labelPolicySpec(), exempt: "object.metadata.namespace == 'web'" });
    const base = daemonSet({});
    const spec = base.spec as JsonObject;
    const template = spec.template as JsonObject;
    const given = { ...base, spec: { ...spec, template: { ...template, metadata: { namespace: 'web', labels: { app: 'agent' } } } } };
    const outcome = plugin(inWeb).validate(given, daemonSetAttributes('CREATE', given), context('ml'));
    assert.match(forbiddenMessage(outcome.denial), /must tolerate/);
  });
});

describe('DedicatedNodes on Karpenter NodePools (karpenter.sh/v1 nodepools CREATE and UPDATE)', () => {
  function nodePool(
    name: string,
    labels: Record<string, string>,
    taints: JsonObject[],
    annotations: Record<string, string> = {},
  ): JsonObject {
    return {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodePool',
      metadata: { name, annotations },
      spec: {
        template: {
          metadata: { labels },
          spec: { nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' }, requirements: [], taints },
        },
      },
    };
  }
  function nodePoolAttributes(operation: Operation, object: JsonObject, oldObject?: JsonObject, subResource = ''): AdmissionAttributes {
    return {
      operation,
      kind: { group: 'karpenter.sh', version: 'v1', kind: 'NodePool' },
      resource: { group: 'karpenter.sh', version: 'v1', resource: 'nodepools' },
      subResource,
      namespace: '',
      name: String((object.metadata as JsonObject).name),
      object,
      oldObject,
      dryRun: false,
    };
  }
  const gpuTaint = { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' };
  const unpaired = nodePool('gpu', { dedicated: 'gpu' }, []);
  const paired = nodePool('gpu', { dedicated: 'gpu' }, [gpuTaint]);

  it('handles nodepools writes, not their status, nor other groups or versions', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [byLabel] }));
    assert.equal(plugin.handles(nodePoolAttributes('CREATE', paired)), true);
    assert.equal(plugin.handles(nodePoolAttributes('UPDATE', paired, paired)), true);
    assert.equal(plugin.handles(nodePoolAttributes('UPDATE', paired, paired, 'status')), false);
    assert.equal(plugin.handles(nodePoolAttributes('DELETE', paired)), false);
    assert.equal(
      plugin.handles({
        ...nodePoolAttributes('CREATE', paired),
        resource: { group: 'karpenter.sh', version: 'v1beta1', resource: 'nodepools' },
      }),
      false,
    );
  });

  it('a NodePool that labels its nodes for a group without tainting them is denied under Deny, naming it and the field', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [byLabel] }));
    const outcome = plugin.validate(unpaired, nodePoolAttributes('CREATE', unpaired), context(undefined));
    const denial = outcome.denial;
    assert.ok(denial?.reason === 'Forbidden');
    assert.deepEqual(denial.object, { group: 'karpenter.sh', resource: 'nodepools', name: 'gpu' });
    assert.match(
      denial.message,
      /^NodePool "gpu" spec\.template\.metadata\.labels\[dedicated\]: labels its nodes for group "gpu" .* \(policy "by-label"\)$/,
    );
    assert.equal(outcome.auditAnnotations?.['dedicated-nodes-decision'], 'denied');
  });

  it('a NodePool that pairs label and taint is allowed', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [byLabel] }));
    const outcome = plugin.validate(paired, nodePoolAttributes('CREATE', paired), context(undefined));
    assert.equal(outcome.denial, undefined);
    assert.equal(outcome.warnings, undefined);
    assert.equal(outcome.auditAnnotations?.['dedicated-nodes-decision'], 'allowed');
  });

  it('under enforcement Warn the NodePool is let through with a warning', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [warnByLabel] }));
    const outcome = plugin.validate(unpaired, nodePoolAttributes('CREATE', unpaired), context(undefined));
    assert.equal(outcome.denial, undefined);
    assert.match(outcome.warnings?.[0] ?? '', /^DedicatedNodes \(enforcement Warn, policy "warn-by-label"\): NodePool "gpu" /);
    assert.equal(outcome.auditAnnotations?.['dedicated-nodes-decision'], 'warned');
  });

  it('an UPDATE that leaves spec.template alone passes (Karpenter writes its own annotations), one that changes it is judged', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [byLabel] }));
    const annotated = nodePool('gpu', { dedicated: 'gpu' }, [], { 'karpenter.sh/nodepool-hash': '123' });
    assert.deepEqual(plugin.validate(annotated, nodePoolAttributes('UPDATE', annotated, unpaired), context(undefined)), {});
    const broken = plugin.validate(unpaired, nodePoolAttributes('UPDATE', unpaired, paired), context(undefined));
    assert.equal(broken.denial?.reason, 'Forbidden');
  });

  it('without policies nothing is judged', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [] }));
    assert.deepEqual(plugin.validate(unpaired, nodePoolAttributes('CREATE', unpaired), context(undefined)), {});
  });

  it('standalone NodeClaim: a karpenter.sh/v1 NodeClaim written directly that labels its node for a group without the taint is denied, naming it; one that pairs them, or an UPDATE that changes neither labels nor spec, is not', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [byLabel] }));
    const claim = (labels: Record<string, string>, taints: JsonObject[], finalizers: string[] = []): JsonObject => ({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name: 'static-1', labels, finalizers },
      spec: { nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' }, requirements: [], taints },
    });
    const claimAttributes = (operation: Operation, object: JsonObject, oldObject?: JsonObject, subResource = ''): AdmissionAttributes => ({
      ...nodePoolAttributes(operation, object, oldObject, subResource),
      kind: { group: 'karpenter.sh', version: 'v1', kind: 'NodeClaim' },
      resource: { group: 'karpenter.sh', version: 'v1', resource: 'nodeclaims' },
    });
    const bad = claim({ dedicated: 'gpu' }, []);
    assert.equal(plugin.handles(claimAttributes('CREATE', bad)), true);
    assert.equal(plugin.handles(claimAttributes('UPDATE', bad, bad, 'status')), false);
    const denial = plugin.validate(bad, claimAttributes('CREATE', bad), context(undefined)).denial;
    assert.ok(denial?.reason === 'Forbidden');
    assert.deepEqual(denial.object, { group: 'karpenter.sh', resource: 'nodeclaims', name: 'static-1' });
    assert.match(denial.message, /^NodeClaim "static-1" metadata\.labels\[dedicated\]: labels its node for group "gpu" /);
    const good = claim({ dedicated: 'gpu' }, [gpuTaint]);
    assert.equal(plugin.validate(good, claimAttributes('CREATE', good), context(undefined)).denial, undefined);
    // Karpenter's own writes to a NodeClaim (its finalizer) change neither its labels nor its spec.
    const finalized = claim({ dedicated: 'gpu' }, [], ['karpenter.sh/termination']);
    assert.deepEqual(plugin.validate(finalized, claimAttributes('UPDATE', finalized, bad), context(undefined)), {});
    // An UPDATE is refused only for what it makes wrong: a NodeClaim admitted before the policy
    // (or while this webhook was down) can still be relabelled, with a warning.
    const relabelled = claim({ dedicated: 'gpu', extra: 'x' }, []);
    const relabelOutcome = plugin.validate(relabelled, claimAttributes('UPDATE', relabelled, bad), context(undefined));
    assert.equal(relabelOutcome.denial, undefined);
    assert.match(
      relabelOutcome.warnings?.[0] ?? '',
      /^DedicatedNodes \(not refused: already true of this NodeClaim before the update, policy "[^"]+"\): NodeClaim "static-1" metadata\.labels\[dedicated\]/,
    );
    const moved = claim({ dedicated: 'other' }, [gpuTaint]);
    assert.equal(plugin.validate(moved, claimAttributes('UPDATE', moved, good), context(undefined)).denial?.reason, 'Forbidden');
  });

  it("a NodePool's own NodeClaim is never refused, at its CREATE nor at its launch's relabel: Karpenter would stop scaling that NodePool and lose track of a launched instance; the finding is a warning that points at the NodePool", () => {
    const plugin = createDedicatedNodes(() => ({ policies: [byLabel] }));
    const fromNodePool = (labels: Record<string, string>): JsonObject => ({
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: {
        name: 'general-x7k2p',
        labels: { 'karpenter.sh/nodepool': 'general', ...labels },
        // As NodeClaimTemplate.ToNodeClaim writes it (Karpenter v1.15.0).
        ownerReferences: [{ apiVersion: 'karpenter.sh/v1', kind: 'NodePool', name: 'general', uid: 'u-1', blockOwnerDeletion: true }],
      },
      spec: { nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' }, requirements: [], taints: [] },
    });
    const claimAttributes = (operation: Operation, object: JsonObject, oldObject?: JsonObject): AdmissionAttributes => ({
      ...nodePoolAttributes(operation, object, oldObject),
      kind: { group: 'karpenter.sh', version: 'v1', kind: 'NodeClaim' },
      resource: { group: 'karpenter.sh', version: 'v1', resource: 'nodeclaims' },
    });
    const created = fromNodePool({ dedicated: 'gpu' });
    const atCreate = plugin.validate(created, claimAttributes('CREATE', created), context(undefined));
    assert.equal(atCreate.denial, undefined);
    assert.match(
      atCreate.warnings?.[0] ?? '',
      /^DedicatedNodes \(not refused: a NodePool made this NodeClaim; the NodePool is judged, fix it there, policy "[^"]+"\): NodeClaim "general-x7k2p" /,
    );
    const launched = fromNodePool({ dedicated: 'gpu', 'node.kubernetes.io/instance-type': 's-4x-amd64-linux' });
    const atLaunch = plugin.validate(launched, claimAttributes('UPDATE', launched, created), context(undefined));
    assert.equal(atLaunch.denial, undefined);
    assert.equal(atLaunch.warnings?.length, 1);
    // The same NodeClaim without the owner is judged as one written by hand.
    const handWritten = { ...created, metadata: { name: 'general-x7k2p', labels: { dedicated: 'gpu' } } };
    assert.equal(plugin.validate(handWritten, claimAttributes('CREATE', handWritten), context(undefined)).denial?.reason, 'Forbidden');
  });

  it('the mutating side leaves a NodePool as it is', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [byLabel] }));
    const outcome = plugin.admit(unpaired, nodePoolAttributes('CREATE', unpaired), context(undefined));
    assert.equal(outcome.object, unpaired);
  });
});
