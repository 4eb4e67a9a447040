/**
 * Dedicated-node tenancy through a real kube-apiserver and kube-controller-manager, with the
 * shipped policies (policies/*.yaml, `--policies`) and the webhooks as `kubectl kustomize deploy/`
 * renders them: what the Deployment, ReplicaSet and DaemonSet controllers' pods are stored with,
 * and what the validating webhook refuses, as the README's "Dedicated-node tenancy" promises.
 *
 * The nodes are fake (test/cluster/fake-node.ts): Ready, with capacity, no kubelet. There is no
 * scheduler in this plane (test/e2e/scheduling.e2e.ts has one), so pods stay Pending and only the
 * controllers' and admission's work is judged.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { podFromTemplate } from '../../src/api/pod-template.js';
import { resourceKindOf } from '../../src/api/resource-kinds.js';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { createFakeNodes } from '../cluster/fake-node.js';
import { pollUntil } from '../cluster/poll.js';
import {
  clientsFor,
  createObject,
  plain,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };
const gpuToleration = { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' };
const gpuRequirement = { key: 'dedicated', operator: 'In', values: ['gpu'] };

/** The DaemonSet controller's set (AddOrUpdateDaemonPodTolerations), in its order, no tolerationSeconds. */
const daemonSet = [
  { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
];
const networkUnavailable = { key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' };

const labelPolicy = 'dedicated-by-namespace-label';
const prefixPolicy = 'dedicated-by-namespace-prefix';

/** The namespaces of both shipped policies, and one that opts out of review. */
const namespaces: Record<string, Record<string, string>> = {
  ml: { dedicated: 'gpu' },
  payments: { dedicated: 'pci' },
  shop: {},
  monitoring: { 'tolerator.dev/node-infrastructure': 'true' },
  'team-a-dev': {},
  'opted-out': { 'tolerator.dev/ignore': 'true' },
};

const nodes = {
  'gpu-1': { labels: { dedicated: 'gpu' }, taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
  'gpu-2': { labels: { dedicated: 'gpu' }, taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
  'pci-1': { labels: { dedicated: 'pci' }, taints: [{ key: 'dedicated', value: 'pci', effect: 'NoSchedule' }] },
  'team-a-1': { labels: { tenant: 'team-a' }, taints: [{ key: 'tenant', value: 'team-a', effect: 'NoSchedule' }] },
  'worker-1': {},
};

/** A container with a CPU request: Burstable, so PodTolerationRestriction adds memory-pressure. */
const container = { name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '10m' } } };

interface PodSpecShape {
  tolerations?: unknown[];
  nodeName?: string;
  affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: unknown[] } } };
  [field: string]: unknown;
}

function specOf(object: Manifest): PodSpecShape {
  return object.spec as PodSpecShape;
}

function termsOf(spec: PodSpecShape): unknown[] | undefined {
  return spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
}

function pod(name: string, namespace: string, spec: Record<string, unknown> = {}): Manifest {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace }, spec: { containers: [container], ...spec } };
}

/**
 * The metadata src/api/pod-template.ts says `owner`'s controller writes on the pods it makes
 * (GetPodFromTemplate), against what the real controller wrote on `pod`: owner reference (uid
 * included), generateName and namespace exactly; the template's labels exactly or at least.
 */
function assertMadeFromTemplate(
  pod: Manifest,
  owner: Manifest,
  ownerKind: 'ReplicaSet' | 'DaemonSet',
  labels: 'exactly' | 'at least',
): void {
  // A listed item has no apiVersion and kind of its own (they are the list's).
  const kind = resourceKindOf('apps/v1', ownerKind);
  assert.ok(kind !== undefined, `${ownerKind} is a kind tolerator reads`);
  const namespace = String(owner.metadata.namespace);
  const predicted = (podFromTemplate(owner, kind, namespace)?.metadata ?? {}) as Record<string, unknown>;
  const actual = pod.metadata;
  assert.deepEqual(
    { ownerReferences: actual.ownerReferences, generateName: actual.generateName, namespace: actual.namespace },
    { ownerReferences: predicted.ownerReferences, generateName: predicted.generateName, namespace: predicted.namespace },
  );
  const actualLabels = (actual.labels ?? {}) as Record<string, string>;
  const predictedLabels = (predicted.labels ?? {}) as Record<string, string>;
  if (labels === 'exactly') assert.deepEqual(actualLabels, predictedLabels);
  else assert.deepEqual(Object.fromEntries(Object.keys(predictedLabels).map((key) => [key, actualLabels[key]])), predictedLabels);
}

/** A Deployment (of `replicas` pods) or a DaemonSet whose pods are labelled app=`name`. */
function withTemplate(
  kind: 'Deployment' | 'DaemonSet',
  name: string,
  namespace: string,
  spec: Record<string, unknown>,
  replicas = 2,
): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind,
    metadata: { name, namespace },
    spec: {
      ...(kind === 'Deployment' ? { replicas } : {}),
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [container], ...spec } },
    },
  };
}

/** The message kube-apiserver returns for a denial by one of tolerator's webhooks. */
function denied(webhook: 'validate' | 'mutate', message: string): string {
  return `admission webhook "${webhook}.tolerator.dev" denied the request: ${message}`;
}

describe('dedicated-node tenancy through kube-apiserver and kube-controller-manager', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let dir: string;
  let platformAdmin: k8s.KubernetesObjectApi;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-tenancy-'));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { controllerManager: true },
      serveArgs: ['--policies', join(REPO_ROOT, 'policies')],
    });
    for (const [name, labels] of Object.entries(namespaces)) {
      await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
    }
    await createFakeNodes(cluster.objects, nodes);
    // A member of platform-admins, whom the prefix policy exempts (cluster-admin, as such a group
    // usually is).
    await createObject(cluster.objects, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'platform-admins' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'platform-admins' }],
    });
    platformAdmin = clientsFor(await cluster.plane.kubeconfigFor('pat', ['platform-admins'])).objects;
  });
  after(async () => {
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The objects of `kind` in `namespace` labelled app=`app`, as stored. */
  const listed = async (apiVersion: string, kind: string, namespace: string, app: string): Promise<Manifest[]> =>
    (
      plain(await cluster.objects.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, `app=${app}`)) as {
        items: Manifest[];
      }
    ).items;

  /** Waits until the controllers have made `count` pods labelled app=`app`, and returns them. */
  const podsOf = (namespace: string, app: string, count: number): Promise<Manifest[]> => {
    let seen: Manifest[] = [];
    return pollUntil(
      `${count} pods of ${namespace}/${app}`,
      async () => {
        seen = await listed('v1', 'Pod', namespace, app);
        return seen.length === count ? seen : undefined;
      },
      { describe: () => `${seen.length} pods` },
    );
  };

  it("a tenant Deployment's pods, made by the ReplicaSet controller, carry the group's toleration and the requirement in every term", async () => {
    const zone = (name: string): unknown => ({
      matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: [name] }],
    });
    const preferred = [{ weight: 1, preference: { matchExpressions: [{ key: 'disktype', operator: 'In', values: ['ssd'] }] } }];
    const affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [zone('zone-a'), zone('zone-b')] },
        preferredDuringSchedulingIgnoredDuringExecution: preferred,
      },
    };
    const stored = await createObject(cluster.objects, withTemplate('Deployment', 'trainer', 'ml', { affinity }));
    // Only pods and DaemonSet templates are mutated: the Deployment keeps its template as written.
    assert.equal(specOf((stored.spec as { template: Manifest }).template).tolerations, undefined);

    const pods = await podsOf('ml', 'trainer', 2);
    const [replicaSet] = await listed('apps/v1', 'ReplicaSet', 'ml', 'trainer');
    assert.ok(replicaSet !== undefined, 'the Deployment controller made a ReplicaSet');
    assert.deepEqual(
      (replicaSet.metadata.ownerReferences as { kind: string; name: string }[]).map(({ kind, name }) => `${kind}/${name}`),
      ['Deployment/trainer'],
    );
    for (const stored of pods) {
      assert.deepEqual(
        (stored.metadata.ownerReferences as { kind: string; name: string }[]).map(({ kind, name }) => `${kind}/${name}`),
        [`ReplicaSet/${String(replicaSet.metadata.name)}`],
      );
      // The ReplicaSet's template (the Deployment's, with its pod-template-hash label) becomes the pod.
      assertMadeFromTemplate(stored, replicaSet, 'ReplicaSet', 'exactly');
      const spec = specOf(stored);
      assert.deepEqual(spec.tolerations, [notReady, unreachable, memoryPressure, gpuToleration]);
      // ANDed into each of the pod's own terms (a new term would be ORed and let it escape);
      // the preferred terms are left alone.
      assert.deepEqual(termsOf(spec), [
        { matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-a'] }, gpuRequirement] },
        { matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-b'] }, gpuRequirement] },
      ]);
      assert.deepEqual(spec.affinity?.nodeAffinity, {
        ...affinity.nodeAffinity,
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: termsOf(spec) },
      });
    }
  });

  it("a Deployment in a team-<t> namespace (the prefix policy) gets its pods the team's toleration and a requirement term", async () => {
    await createObject(cluster.objects, withTemplate('Deployment', 'api', 'team-a-dev', {}, 1));
    const [stored] = await podsOf('team-a-dev', 'api', 1);
    assert.ok(stored !== undefined);
    const spec = specOf(stored);
    assert.deepEqual(spec.tolerations, [
      notReady,
      unreachable,
      memoryPressure,
      { key: 'tenant', operator: 'Equal', value: 'team-a', effect: 'NoSchedule' },
    ]);
    assert.deepEqual(termsOf(spec), [{ matchExpressions: [{ key: 'tenant', operator: 'In', values: ['team-a'] }] }]);
  });

  it("a Deployment tolerating another group's taint is refused when it is applied, and never stored", async () => {
    const foreign = { key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' };
    const answer = await refusal(createObject(cluster.objects, withTemplate('Deployment', 'intruder', 'ml', { tolerations: [foreign] })));
    assert.equal(answer.code, 403);
    assert.equal(answer.status.reason, 'Forbidden');
    assert.equal(
      answer.status.message,
      denied(
        'validate',
        `spec.template.spec.tolerations[0] tolerates the dedicated taint of group "pci" (dedicated=<group>:NoSchedule, policy "${labelPolicy}"); namespace "ml" belongs to group "gpu", and only an infrastructure namespace may reach other groups' nodes`,
      ),
    );
    const read = await refusal(
      cluster.objects.read({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'intruder', namespace: 'ml' } }),
    );
    assert.equal(read.code, 404);

    // Outside every group, an Exists on the key tolerates every group's taint.
    const everyGroup = await refusal(
      createObject(
        cluster.objects,
        withTemplate('Deployment', 'greedy', 'shop', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
      ),
    );
    assert.equal(everyGroup.code, 403);
    assert.equal(
      everyGroup.status.message,
      denied(
        'validate',
        `spec.template.spec.tolerations[0] tolerates the dedicated taint of every group (dedicated=<group>:NoSchedule, policy "${labelPolicy}"); namespace "shop" belongs to no group, and only an infrastructure namespace may reach other groups' nodes`,
      ),
    );
  });

  it("a pod naming another group's node in spec.nodeName is refused, from a tenant namespace and from one of no group", async () => {
    const fromTenant = await refusal(createObject(cluster.objects, pod('pinned', 'ml', { nodeName: 'pci-1' })));
    assert.equal(fromTenant.code, 403);
    assert.equal(fromTenant.status.reason, 'Forbidden');
    assert.equal(
      fromTenant.status.message,
      denied(
        'validate',
        `spec.nodeName "pci-1" is a node of group "pci" (policy "${labelPolicy}"); namespace "ml" belongs to group "gpu", and only an infrastructure namespace may reach other groups' nodes`,
      ),
    );
    const fromShop = await refusal(createObject(cluster.objects, pod('pinned', 'shop', { nodeName: 'team-a-1' })));
    assert.equal(fromShop.code, 403);
    assert.equal(
      fromShop.status.message,
      denied(
        'validate',
        `spec.nodeName "team-a-1" is a node of group "team-a" (policy "${prefixPolicy}"); namespace "shop" belongs to no group, and only an infrastructure namespace may reach other groups' nodes`,
      ),
    );
    // The group's own node is allowed, and the pod gets the pair as any tenant pod does.
    const own = specOf(await createObject(cluster.objects, pod('pinned', 'ml', { nodeName: 'gpu-1' })));
    assert.equal(own.nodeName, 'gpu-1');
    assert.deepEqual(own.tolerations, [notReady, unreachable, memoryPressure, gpuToleration]);
  });

  it('a pod or a Deployment naming a node that does not exist is refused; the API server alone would store it', async () => {
    const missing = (path: string, policy: string, key: string): string =>
      `${path}.nodeName "ghost-1" names no existing node; its dedicated-node group cannot be determined, and a node registering under that name would run the pod without its ${key}=<group>:NoSchedule taint applying (policy "${policy}")`;
    const answer = await refusal(createObject(cluster.objects, pod('ghost', 'shop', { nodeName: 'ghost-1' })));
    assert.equal(answer.code, 403);
    assert.equal(answer.status.reason, 'Forbidden');
    // Both policies find it; the denial lists both, in policy order.
    assert.equal(
      answer.status.message,
      denied(
        'validate',
        [
          `${missing('spec', labelPolicy, 'dedicated')}; namespace "shop" belongs to no group, and only an infrastructure namespace may reach other groups' nodes`,
          `${missing('spec', prefixPolicy, 'tenant')}; namespace "shop" belongs to no group, and only an infrastructure namespace may reach other groups' nodes`,
        ].join('; '),
      ),
    );
    const template = await refusal(createObject(cluster.objects, withTemplate('Deployment', 'ghost', 'ml', { nodeName: 'ghost-1' })));
    assert.equal(template.code, 403);
    assert.match(
      template.status.message ?? '',
      /^admission webhook "validate\.tolerator\.dev" denied the request: spec\.template\.spec\.nodeName "ghost-1" names no existing node/,
    );
    // Where tolerator does not review (an opted-out namespace), kube-apiserver stores such a pod.
    const unreviewed = specOf(await createObject(cluster.objects, pod('ghost', 'opted-out', { nodeName: 'ghost-1' })));
    assert.equal(unreviewed.nodeName, 'ghost-1');
  });

  it("a tenant DaemonSet's pods, made by the DaemonSet controller on the group's nodes only, carry its toleration set and the pair", async () => {
    const stored = await createObject(cluster.objects, withTemplate('DaemonSet', 'gpu-agent', 'ml', {}));
    const daemonSetStored = stored;
    // The mutating webhook gives the template the pair, so the controller targets the group's nodes.
    const template = specOf((stored.spec as { template: Manifest }).template);
    assert.deepEqual(template.tolerations, [gpuToleration]);
    assert.deepEqual(termsOf(template), [{ matchExpressions: [gpuRequirement] }]);

    const pods = await podsOf('ml', 'gpu-agent', 2);
    const targets = pods.map((stored) => {
      // The DaemonSet controller adds its controller-revision-hash and pod-template-generation labels.
      assertMadeFromTemplate(stored, daemonSetStored, 'DaemonSet', 'at least');
      const spec = specOf(stored);
      // The template's toleration first, then the controller's set; tolerator adds nothing more
      // (the set already covers not-ready, unreachable and memory-pressure).
      assert.deepEqual(spec.tolerations, [gpuToleration, ...daemonSet]);
      // The controller replaces the template's required terms with one naming the target node
      // (ReplaceDaemonSetPodNodeNameNodeAffinity); the mutating webhook ANDs the requirement back in.
      const [term, ...others] = (termsOf(spec) ?? []) as { matchExpressions?: unknown[]; matchFields?: { values: string[] }[] }[];
      assert.deepEqual(others, []);
      assert.deepEqual(term?.matchExpressions, [gpuRequirement]);
      return term.matchFields?.at(0)?.values.at(0);
    });
    assert.deepEqual(targets.sort(), ['gpu-1', 'gpu-2']);
    const status = await pollUntil('the DaemonSet status', async () => {
      const read = plain(
        await cluster.objects.read({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: { name: 'gpu-agent', namespace: 'ml' } }),
      ) as Manifest & { status?: { observedGeneration?: number; desiredNumberScheduled?: number } };
      return read.status?.observedGeneration === 1 ? read.status : undefined;
    });
    assert.equal(status.desiredNumberScheduled, 2);
  });

  it('an infrastructure DaemonSet tolerating every taint gets pods on every node; hostNetwork adds network-unavailable', async () => {
    const everything = { operator: 'Exists' };
    // BestEffort: a Burstable pod would get memory-pressure from PodTolerationRestriction, whose
    // merge (MergeTolerations, as in-tree) then drops every toleration `Exists` covers.
    const bestEffort = { name: 'agent', image: 'registry.example/agent:1' };
    await createObject(
      cluster.objects,
      withTemplate('DaemonSet', 'log-shipper', 'monitoring', { containers: [bestEffort], tolerations: [everything], hostNetwork: true }),
    );
    const pods = await podsOf('monitoring', 'log-shipper', Object.keys(nodes).length);
    const targets = pods.map((stored) => {
      const spec = specOf(stored);
      assert.deepEqual(spec.tolerations, [everything, ...daemonSet, networkUnavailable]);
      const [term] = (termsOf(spec) ?? []) as { matchExpressions?: unknown[]; matchFields?: { values: string[] }[] }[];
      // A namespace of no group: no group requirement.
      assert.equal(term?.matchExpressions, undefined);
      return term?.matchFields?.at(0)?.values.at(0);
    });
    assert.deepEqual(targets.sort(), Object.keys(nodes).sort());
  });

  it("a tenant DaemonSet whose template asks for another group's nodes is refused by the mutating webhook", async () => {
    const answer = await refusal(
      createObject(cluster.objects, withTemplate('DaemonSet', 'stray', 'ml', { nodeSelector: { dedicated: 'pci' } })),
    );
    assert.equal(answer.code, 403);
    assert.equal(answer.status.reason, 'Forbidden');
    assert.match(
      answer.status.message ?? '',
      /^admission webhook "mutate\.tolerator\.dev" denied the request: DaemonSet pod templates in namespace "ml" \(group "gpu", policy "dedicated-by-namespace-label"\) may only run on nodes labelled dedicated=gpu, but the pod asks for other nodes: spec\.template\.spec\.nodeSelector/,
    );
  });

  it("a platform admin's own pod is exempt (prefix policy), but its Deployment is judged as the ReplicaSet controller's pods will be: refused", async () => {
    const elsewhere = { nodeSelector: { tenant: 'team-b' } };
    // Exempt: a pod pat creates directly keeps its own choice and gets no pair.
    const own = specOf(await createObject(platformAdmin, pod('debug', 'team-a-dev', elsewhere)));
    assert.deepEqual(own.nodeSelector, { tenant: 'team-b' });
    assert.deepEqual(own.tolerations, [notReady, unreachable, memoryPressure]);
    // Its Deployment's pods are requested by the controller, which no policy exempts: they would be
    // refused one by one, so the Deployment is refused when it is applied.
    const answer = await refusal(createObject(platformAdmin, withTemplate('Deployment', 'debug', 'team-a-dev', elsewhere, 1)));
    assert.equal(answer.code, 403);
    assert.equal(answer.status.reason, 'Forbidden');
    assert.equal(
      answer.status.message,
      denied(
        'validate',
        `Deployment pod templates in namespace "team-a-dev" (group "team-a", policy "${prefixPolicy}") may only run on nodes labelled tenant=team-a, but the pod asks for other nodes: spec.template.spec.nodeSelector selects tenant=team-b, not the namespace's group team-a`,
      ),
    );
  });

  it("a platform admin's DaemonSet in a team namespace is given the pair, so the DaemonSet controller's pods go to the team's nodes", async () => {
    const stored = await createObject(platformAdmin, withTemplate('DaemonSet', 'team-agent', 'team-a-dev', {}));
    const teamA = { key: 'tenant', operator: 'Equal', value: 'team-a', effect: 'NoSchedule' };
    assert.deepEqual(specOf((stored.spec as { template: Manifest }).template).tolerations, [teamA]);
    const [daemonPod] = await podsOf('team-a-dev', 'team-agent', 1);
    assert.ok(daemonPod !== undefined);
    const [term] = (termsOf(specOf(daemonPod)) ?? []) as { matchExpressions?: unknown[]; matchFields?: { values: string[] }[] }[];
    assert.deepEqual(term, {
      matchFields: [{ key: 'metadata.name', operator: 'In', values: ['team-a-1'] }],
      matchExpressions: [{ key: 'tenant', operator: 'In', values: ['team-a'] }],
    });
  });
});
