/**
 * DedicatedNodes and RuntimeClasses (docs/tenancy.md#runtimeclasses): the per-group allow-list of
 * `spec.runtimeClasses`, the refusal that names the RuntimeClass, and the attribution of a
 * toleration or nodeSelector entry that the in-tree RuntimeClass admission plugin merged into the
 * pod before the webhooks saw it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { JsonObject, Namespace, RuntimeClass, Toleration } from '../../src/api/types.js';
import { createDedicatedNodes } from '../../src/plugins/dedicated-nodes.js';
import type { AdmissionAttributes, Operation, PluginContext } from '../../src/plugins/plugin.js';
import type { TenancyPolicy } from '../../src/tenancy/policy.js';
import { compilePolicy, labelPolicySpec, namespace, pod } from '../tenancy/tenancy-fixtures.js';

const withRuntimeClasses = compilePolicy('runtime-classes', {
  ...labelPolicySpec(),
  runtimeClasses: { pci: ['kata-pci'], gpu: ['nvidia', 'gvisor'], web: ['gvisor'] },
});
const warnWithRuntimeClasses = compilePolicy('warn-runtime-classes', {
  ...labelPolicySpec(),
  enforcement: 'Warn',
  runtimeClasses: { pci: ['kata-pci'] },
});

const namespaces: Record<string, Namespace> = {
  payments: namespace('payments', { dedicated: 'pci' }),
  ml: namespace('ml', { dedicated: 'gpu' }),
  analytics: namespace('analytics', { dedicated: 'analytics' }),
  shop: namespace('shop'),
  logging: namespace('logging', { 'tolerator.dev/node-infrastructure': 'true' }),
};

/** The RuntimeClass the platform team made for group pci: its scheduling reaches pci's nodes. */
const kataPci: RuntimeClass = {
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name: 'kata-pci' },
  scheduling: {
    nodeSelector: { dedicated: 'pci' },
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' }],
  },
};

function context(ns: string, runtimeClass?: RuntimeClass): PluginContext {
  return {
    gates: defaultFeatureGates,
    namespace: namespaces[ns],
    node: () => undefined,
    nodesKnown: true,
    nodes: () => [],
    ...(runtimeClass === undefined ? {} : { runtimeClass }),
  };
}

function attributes(operation: Operation, object: JsonObject, ns: string, oldObject?: JsonObject): AdmissionAttributes {
  return {
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

function groupToleration(group: string): Toleration {
  return { key: 'dedicated', operator: 'Equal', value: group, effect: 'NoSchedule' };
}

/** A pod of `group` as the mutating side leaves it, with `extra` in its spec. */
function tenantPod(group: string, extra: JsonObject = {}): JsonObject {
  const tolerations = [groupToleration(group), ...((extra.tolerations as Toleration[] | undefined) ?? [])];
  return pod({
    ...extra,
    tolerations,
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: [group] }] }],
        },
      },
    },
  });
}

/** The pod a tenant of `group` wrote naming kata-pci, as the RuntimeClass plugin hands it on: kata-pci's scheduling merged in. */
function mergedKataPod(group: string): JsonObject {
  return tenantPod(group, {
    runtimeClassName: 'kata-pci',
    nodeSelector: { dedicated: 'pci' },
    tolerations: [groupToleration('pci')],
  });
}

function validate(policy: TenancyPolicy, object: JsonObject, ns: string, runtimeClass?: RuntimeClass, operation: Operation = 'CREATE') {
  const plugin = createDedicatedNodes(() => ({ policies: [policy] }));
  return plugin.validate(object, attributes(operation, object, ns, operation === 'UPDATE' ? object : undefined), context(ns, runtimeClass));
}

function refusal(outcome: ReturnType<typeof validate>): string {
  return outcome.denial?.reason === 'Forbidden' ? outcome.denial.message : '';
}

describe('RuntimeClass allow-list: a RuntimeClass made for group A, named by a tenant of group B, is refused by its name', () => {
  it("a gpu tenant naming pci's RuntimeClass is refused, the message naming the RuntimeClass and its group", () => {
    const outcome = validate(withRuntimeClasses, tenantPod('gpu', { runtimeClassName: 'kata-pci' }), 'ml');
    assert.match(
      refusal(outcome),
      /spec\.runtimeClassName "kata-pci" names a RuntimeClass of group "pci" \(spec\.runtimeClasses of policy "runtime-classes"\)/,
    );
    assert.match(
      refusal(outcome),
      /namespace "ml" belongs to group "gpu", and only an infrastructure namespace may reach other groups' nodes/,
    );
  });

  it("a namespace of no group naming a group's RuntimeClass is refused", () => {
    const outcome = validate(withRuntimeClasses, pod({ runtimeClassName: 'kata-pci' }), 'shop');
    assert.match(refusal(outcome), /spec\.runtimeClassName "kata-pci" names a RuntimeClass of group "pci"/);
    assert.match(refusal(outcome), /namespace "shop" belongs to no group/);
  });

  it('the pci tenant may name its own RuntimeClass', () => {
    const outcome = validate(withRuntimeClasses, mergedKataPod('pci'), 'payments', kataPci);
    assert.equal(outcome.denial, undefined);
  });

  it('a RuntimeClass listed for several groups is allowed to each of them and refused to the others', () => {
    assert.equal(validate(withRuntimeClasses, tenantPod('gpu', { runtimeClassName: 'gvisor' }), 'ml').denial, undefined);
    assert.match(
      refusal(validate(withRuntimeClasses, tenantPod('pci', { runtimeClassName: 'gvisor' }), 'payments')),
      /spec\.runtimeClassName "gvisor" names a RuntimeClass of groups "gpu", "web"/,
    );
  });

  it("an infrastructure namespace may name any group's RuntimeClass, recorded in the audit annotation", () => {
    const outcome = validate(withRuntimeClasses, pod({ runtimeClassName: 'kata-pci' }), 'logging');
    assert.equal(outcome.denial, undefined);
    assert.match(
      outcome.auditAnnotations?.['dedicated-nodes-infrastructure'] ?? '',
      /runtimeClassName "kata-pci" names a RuntimeClass of group "pci"/,
    );
  });
});

describe('RuntimeClass allow-list: a group that lists its RuntimeClasses is kept to them', () => {
  it('a pci tenant naming an unlisted RuntimeClass is refused with the list it may use', () => {
    const outcome = validate(withRuntimeClasses, tenantPod('pci', { runtimeClassName: 'runc-fast' }), 'payments');
    assert.match(
      refusal(outcome),
      /spec\.runtimeClassName "runc-fast" is not one of the RuntimeClasses group "pci" may use \("kata-pci"; spec\.runtimeClasses of policy "runtime-classes"\)/,
    );
  });

  it('a pod naming no RuntimeClass is not refused for it', () => {
    assert.equal(validate(withRuntimeClasses, tenantPod('pci'), 'payments').denial, undefined);
  });

  it('a group that lists none may name any RuntimeClass no group lists', () => {
    assert.equal(validate(withRuntimeClasses, tenantPod('analytics', { runtimeClassName: 'runc-fast' }), 'analytics').denial, undefined);
  });

  it('under enforcement Warn the pod is let through with a warning naming the RuntimeClass', () => {
    const outcome = validate(warnWithRuntimeClasses, tenantPod('pci', { runtimeClassName: 'runc-fast' }), 'payments');
    assert.equal(outcome.denial, undefined);
    assert.match(
      outcome.warnings?.join('\n') ?? '',
      /enforcement Warn, policy "warn-runtime-classes".*runtimeClassName "runc-fast" is not one of the RuntimeClasses/,
    );
  });

  it('a pod UPDATE is not judged on its RuntimeClass (immutable once created)', () => {
    const outcome = validate(withRuntimeClasses, tenantPod('gpu', { runtimeClassName: 'kata-pci' }), 'ml', undefined, 'UPDATE');
    assert.equal(outcome.denial, undefined);
  });

  it("a Deployment template naming another group's RuntimeClass is refused at once", () => {
    const deployment: JsonObject = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'ml' },
      spec: { template: { spec: { containers: [{ name: 'app', image: 'app:1' }], runtimeClassName: 'kata-pci' } } },
    };
    const plugin = createDedicatedNodes(() => ({ policies: [withRuntimeClasses] }));
    const outcome = plugin.validate(
      deployment,
      {
        ...attributes('CREATE', deployment, 'ml'),
        kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
        resource: { group: 'apps', version: 'v1', resource: 'deployments' },
      },
      context('ml'),
    );
    assert.match(refusal(outcome), /spec\.template\.spec\.runtimeClassName "kata-pci" names a RuntimeClass of group "pci"/);
  });
});

describe('RuntimeClass attribution: a refusal caused by what the RuntimeClass merged says so', () => {
  // No allow-list: the toleration and nodeSelector kata-pci merged are refused as ever, and now explained.
  const plain = compilePolicy('plain');

  it("a foreign toleration the RuntimeClass merged is refused naming the RuntimeClass's scheduling.tolerations", () => {
    const outcome = validate(plain, mergedKataPod('gpu'), 'ml', kataPci);
    assert.match(
      refusal(outcome),
      /spec\.tolerations\[1\] tolerates the dedicated taint of group "pci" \(dedicated=<group>:NoSchedule, policy "plain"\), merged into the pod from RuntimeClass "kata-pci"'s scheduling\.tolerations by the RuntimeClass admission plugin/,
    );
  });

  it("a nodeSelector entry the RuntimeClass merged is refused naming the RuntimeClass's scheduling.nodeSelector", () => {
    const outcome = validate(plain, mergedKataPod('gpu'), 'ml', kataPci);
    assert.match(
      refusal(outcome),
      /spec\.nodeSelector selects dedicated=pci, not the namespace's group gpu \(merged into the pod from RuntimeClass "kata-pci"'s scheduling\.nodeSelector by the RuntimeClass admission plugin\)/,
    );
  });

  it('the mutating side names the RuntimeClass too, when it refuses the merged nodeSelector', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [plain] }));
    const object = pod({ runtimeClassName: 'kata-pci', nodeSelector: { dedicated: 'pci' }, tolerations: [groupToleration('pci')] });
    const outcome = plugin.admit(object, attributes('CREATE', object, 'ml'), context('ml', kataPci));
    assert.match(
      outcome.denial?.reason === 'Forbidden' ? outcome.denial.message : '',
      /from RuntimeClass "kata-pci"'s scheduling\.nodeSelector/,
    );
  });

  it('a toleration the tenant wrote itself, not in the RuntimeClass, is not attributed to it', () => {
    const object = tenantPod('gpu', { runtimeClassName: 'kata-pci', tolerations: [groupToleration('web')] });
    const message = refusal(validate(plain, object, 'ml', kataPci));
    assert.match(message, /tolerates the dedicated taint of group "web"/);
    assert.doesNotMatch(message, /merged into the pod/);
  });

  it('without the RuntimeClass object (not in the cluster state) the refusal stands, unexplained', () => {
    const message = refusal(validate(plain, mergedKataPod('gpu'), 'ml'));
    assert.match(message, /tolerates the dedicated taint of group "pci"/);
    assert.doesNotMatch(message, /merged into the pod/);
  });

  it('asks the pipeline for the RuntimeClass on a Pod CREATE only', () => {
    const plugin = createDedicatedNodes(() => ({ policies: [plain] }));
    const reads = (operation: Operation): boolean | undefined =>
      plugin.readsRuntimeClass?.(attributes(operation, pod(), 'ml', operation === 'UPDATE' ? pod() : undefined));
    assert.equal(reads('CREATE'), true);
    assert.equal(reads('UPDATE'), false);
  });
});
