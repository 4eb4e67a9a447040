/**
 * Red team of `tolerator export`'s tenancy part: a hostile tenant's pods and workloads, and an
 * outsider's, sent to two real kube-apiservers, one running tolerator's webhook and one only the
 * exported policies (the shipped namespace-label TenancyPolicy on both). The claim under test
 * (docs/without-a-webhook.md): what the webhook refuses the policies refuse, and what both admit
 * is stored the same (tolerations, node affinity, node selector of the pod spec). The policies
 * may be stricter only where that page says so (the nodeName rule, 19-digit integers, the CEL cost
 * budget); no case here names a node.
 *
 * Each attack is a dry run (nothing stored), but for the UPDATE paths, which need an object to
 * update. REDTEAM_VERBOSE=1 prints both verdicts of every attack (which way each went).
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { loadPolicies } from '../../src/server/tenancy-policies.js';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import {
  controlPlaneMinor,
  defaultExportSettings,
  exportedDocuments,
  installExportedPolicies,
  mutatingPolicyPlaneOptions,
} from '../cluster/exported-policies.js';
import { pollUntil } from '../cluster/poll.js';
import {
  apiError,
  asKubernetesObject,
  clientsFor,
  createObject,
  plain,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const POLICY = 'dedicated-by-namespace-label';
const burstable = { requests: { cpu: '100m', memory: '64Mi' } };
const container = { name: 'c', image: 'registry.k8s.io/pause:3.10', resources: burstable };

type Spec = Record<string, unknown>;

function pod(name: string, namespace: string, spec: Spec, metadata: Record<string, unknown> = {}): Manifest {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, ...metadata }, spec: { containers: [container], ...spec } };
}

const labels = { app: 'x' };
function deployment(name: string, namespace: string, spec: Spec): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: { selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [container], ...spec } } },
  };
}
function daemonSet(name: string, namespace: string, spec: Spec): Manifest {
  return { ...deployment(name, namespace, spec), kind: 'DaemonSet' };
}
function cronJob(name: string, namespace: string, spec: Spec): Manifest {
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name, namespace },
    spec: {
      schedule: '* * * * *',
      jobTemplate: { spec: { template: { spec: { containers: [container], restartPolicy: 'Never', ...spec } } } },
    },
  };
}

const required = (...terms: unknown[]): Spec => ({
  affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
});
const expr = (key: string, operator: string, values?: string[]): Record<string, unknown> => ({
  key,
  operator,
  ...(values === undefined ? {} : { values }),
});

/** The pod spec a stored object holds, for the kinds above. */
function podSpecOf(object: Manifest): Spec {
  const spec = object.spec as Spec;
  if (object.kind === 'Pod') return spec;
  if (object.kind === 'PodTemplate') return ((object.template as Spec).spec ?? {}) as Spec;
  if (object.kind === 'CronJob') return ((((spec.jobTemplate as Spec).spec as Spec).template as Spec).spec ?? {}) as Spec;
  return ((spec.template as Spec).spec ?? {}) as Spec;
}

function placement(object: Manifest): Spec {
  const spec = podSpecOf(object);
  return { tolerations: spec.tolerations, affinity: spec.affinity, nodeSelector: spec.nodeSelector };
}

type Verdict = { admitted: Manifest } | { refused: number; message: string };

async function judge(objects: k8s.KubernetesObjectApi, object: Manifest): Promise<Verdict> {
  try {
    return { admitted: await createObject(objects, object, 'All') };
  } catch (error) {
    const { code, status } = apiError(error);
    return { refused: code, message: status.message ?? '' };
  }
}

function describeVerdict(verdict: Verdict): string {
  return 'admitted' in verdict
    ? `admitted ${JSON.stringify(placement(verdict.admitted))}`
    : `refused ${verdict.refused}: ${verdict.message}`;
}

/** Namespaces: name → labels. `g2024`'s group is numeric, for Gt/Lt; `blank` has the group label empty. */
const namespaces: Record<string, Record<string, string>> = {
  apps: {},
  gpu: { dedicated: 'gpu' },
  'gpu-exempt': { dedicated: 'gpu', 'tolerator.dev/exempt': 'true' },
  agents: { 'tolerator.dev/node-infrastructure': 'true' },
  g2024: { dedicated: '2024' },
  blank: { dedicated: '' },
  'gpu-agents': { dedicated: 'gpu', 'tolerator.dev/node-infrastructure': 'true' },
  // Group values that read as something else in JSON or to a number parser.
  gnull: { dedicated: 'null' },
  gexp: { dedicated: '1e3' },
  gzero: { dedicated: '0' },
};

const pci = { key: 'dedicated', operator: 'Equal', value: 'pci', effect: 'NoSchedule' };

/** The attacks: each sent to both sides, both verdicts compared. */
const attacks: Record<string, () => Manifest> = {
  // Tolerations that reach another group's taint.
  'tenant: Exists with an empty key': () => pod('a1', 'gpu', { tolerations: [{ operator: 'Exists' }] }),
  'tenant: Exists with an empty key and effect NoSchedule': () =>
    pod('a2', 'gpu', { tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }] }),
  'tenant: Exists on the group key, no effect': () => pod('a3', 'gpu', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
  'tenant: Equal with the other group, no effect': () =>
    pod('a4', 'gpu', { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'pci' }] }),
  'tenant: no operator (Equal) with the other group': () => pod('a5', 'gpu', { tolerations: [{ key: 'dedicated', value: 'pci' }] }),
  'tenant: Exists on the group key with effect NoExecute (does not reach NoSchedule)': () =>
    pod('a6', 'gpu', { tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 5 }] }),
  'tenant: Equal with the other group and PreferNoSchedule (does not reach NoSchedule)': () =>
    pod('a7', 'gpu', { tolerations: [{ ...pci, effect: 'PreferNoSchedule' }] }),
  'tenant: lower-case operator "exists"': () => pod('a8', 'gpu', { tolerations: [{ key: 'dedicated', operator: 'exists' }] }),
  'tenant: operator " Exists" with a space': () => pod('a9', 'gpu', { tolerations: [{ key: 'dedicated', operator: ' Exists' }] }),
  'tenant: effect "noschedule"': () => pod('a10', 'gpu', { tolerations: [{ ...pci, effect: 'noschedule' }] }),
  'tenant: key "Dedicated" (another key: reaches nothing)': () => pod('a11', 'gpu', { tolerations: [{ ...pci, key: 'Dedicated' }] }),
  'tenant: Gt on the group key (numeric groups)': () =>
    pod('a12', 'g2024', { tolerations: [{ key: 'dedicated', operator: 'Gt', value: '1', effect: 'NoSchedule' }] }),
  'tenant: Lt on the group key (numeric groups)': () =>
    pod('a12b', 'g2024', { tolerations: [{ key: 'dedicated', operator: 'Lt', value: '99999', effect: 'NoSchedule' }] }),
  'tenant: Gt with an empty key': () => pod('a12c', 'g2024', { tolerations: [{ operator: 'Gt', value: '1' }] }),
  'outsider: Gt on the group key': () => pod('a12d', 'apps', { tolerations: [{ key: 'dedicated', operator: 'Gt', value: '0' }] }),
  'tenant: its own toleration with tolerationSeconds and no effect': () =>
    pod('a12e', 'gpu', { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu', tolerationSeconds: 5 }] }),
  'tenant: its own group toleration with effect "" (already tolerates its group)': () =>
    pod('a13', 'gpu', { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'gpu' }] }),
  'exempt namespace: Exists on the group key': () => pod('a14', 'gpu-exempt', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
  'outsider: the gpu toleration': () => pod('a15', 'apps', { tolerations: [pci] }),
  'namespace with an empty group label: the gpu toleration': () => pod('a16', 'blank', { tolerations: [pci] }),
  'tenant of an infrastructure namespace: Exists on the group key': () =>
    pod('a17', 'gpu-agents', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
  'a non-mirror tenant pod with the mirror annotation and a foreign toleration': () =>
    pod('a18', 'gpu', { tolerations: [pci] }, { annotations: { 'kubernetes.io/config.mirror': 'x' } }),
  'a non-mirror tenant pod with the mirror annotation, a node name and a foreign toleration': () =>
    pod('a19', 'gpu', { nodeName: 'n1', tolerations: [pci] }, { annotations: { 'kubernetes.io/config.mirror': 'x' } }),
  // Hostile group values: the pair is built and compared as text.
  'group "null": a bare pod': () => pod('c1', 'gnull', {}),
  'group "null": Equal with the other group': () => pod('c2', 'gnull', { tolerations: [pci] }),
  'group "1e3": a bare pod': () => pod('c3', 'gexp', {}),
  'group "1e3": Gt 1 on the group label (1e3 is no integer to ParseInt)': () =>
    pod('c4', 'gexp', required({ matchExpressions: [expr('dedicated', 'Gt', ['1'])] })),
  'group "0": Lt 1 on the group label': () => pod('c5', 'gzero', required({ matchExpressions: [expr('dedicated', 'Lt', ['1'])] })),
  'group "0": Gt -1 on the group label': () => pod('c6', 'gzero', required({ matchExpressions: [expr('dedicated', 'Gt', ['-1'])] })),
  // Node affinity escapes.
  'tenant: an extra ORed term without the group requirement': () =>
    pod('b1', 'gpu', required({ matchExpressions: [expr('dedicated', 'In', ['gpu'])] }, { matchExpressions: [expr('zone', 'In', ['a'])] })),
  'tenant: a term on matchFields only': () =>
    pod('b2', 'gpu', required({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n-pci'] }] })),
  'tenant: NotIn [gpu]': () => pod('b3', 'gpu', required({ matchExpressions: [expr('dedicated', 'NotIn', ['gpu'])] })),
  'tenant: NotIn [pci]': () => pod('b4', 'gpu', required({ matchExpressions: [expr('dedicated', 'NotIn', ['pci'])] })),
  'tenant: DoesNotExist on the group label': () => pod('b5', 'gpu', required({ matchExpressions: [expr('dedicated', 'DoesNotExist')] })),
  'tenant: Exists on the group label': () => pod('b6', 'gpu', required({ matchExpressions: [expr('dedicated', 'Exists')] })),
  'tenant: In [gpu, pci]': () => pod('b7', 'gpu', required({ matchExpressions: [expr('dedicated', 'In', ['gpu', 'pci'])] })),
  'tenant: In [gpu, gpu] (its own requirement, another shape)': () =>
    pod('b8', 'gpu', required({ matchExpressions: [expr('dedicated', 'In', ['gpu', 'gpu'])] })),
  'tenant: In [pci] in a second term': () =>
    pod('b9', 'gpu', required({ matchExpressions: [expr('zone', 'In', ['a'])] }, { matchExpressions: [expr('dedicated', 'In', ['pci'])] })),
  'tenant: an empty term beside another': () => pod('b10', 'gpu', required({}, { matchExpressions: [expr('zone', 'In', ['a'])] })),
  'tenant: an empty term alone': () => pod('b11', 'gpu', required({})),
  'tenant: an empty list of terms': () => pod('b12', 'gpu', required()),
  'tenant: a preferred term for the other group': () =>
    pod('b13', 'gpu', {
      affinity: {
        nodeAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 100, preference: { matchExpressions: [expr('dedicated', 'In', ['pci'])] } },
          ],
        },
      },
    }),
  'tenant: nodeSelector for the other group': () => pod('b14', 'gpu', { nodeSelector: { dedicated: 'pci' } }),
  'tenant: nodeSelector with key "Dedicated"': () => pod('b15', 'gpu', { nodeSelector: { Dedicated: 'pci' } }),
  'tenant: requirement key "Dedicated"': () => pod('b16', 'gpu', required({ matchExpressions: [expr('Dedicated', 'In', ['pci'])] })),
  'tenant: Gt 2000 on the numeric group label (admits 2024)': () =>
    pod('b17', 'g2024', required({ matchExpressions: [expr('dedicated', 'Gt', ['2000'])] })),
  'tenant: Lt 2000 on the numeric group label (excludes 2024)': () =>
    pod('b18', 'g2024', required({ matchExpressions: [expr('dedicated', 'Lt', ['2000'])] })),
  'tenant: Gt +2000 with a sign': () => pod('b19', 'g2024', required({ matchExpressions: [expr('dedicated', 'Gt', ['+2000'])] })),
  'tenant: Gt 02025 with a leading zero (excludes 2024)': () =>
    pod('b20', 'g2024', required({ matchExpressions: [expr('dedicated', 'Gt', ['02025'])] })),
  'tenant: Gt on a non-numeric group': () => pod('b21', 'gpu', required({ matchExpressions: [expr('dedicated', 'Gt', ['1'])] })),
  'tenant: the requirement and a NotIn [gpu] in one term': () =>
    pod('b22', 'gpu', required({ matchExpressions: [expr('dedicated', 'In', ['gpu']), expr('dedicated', 'NotIn', ['gpu'])] })),
  'tenant: scheduling gates and nodeSelector for its group': () =>
    pod('b23', 'gpu', { schedulingGates: [{ name: 'example.com/wait' }], nodeSelector: { dedicated: 'gpu' } }),
  // Workload templates.
  'Deployment: a foreign toleration': () => deployment('d1', 'gpu', { tolerations: [pci] }),
  'Deployment: nodeSelector for the other group': () => deployment('d2', 'gpu', { nodeSelector: { dedicated: 'pci' } }),
  'Deployment: an ORed term without the requirement (its pods get it)': () =>
    deployment('d3', 'gpu', required({ matchExpressions: [expr('zone', 'In', ['a'])] })),
  'DaemonSet: an ORed term without the requirement': () =>
    daemonSet(
      'd4',
      'gpu',
      required({ matchExpressions: [expr('dedicated', 'In', ['gpu'])] }, { matchExpressions: [expr('zone', 'In', ['a'])] }),
    ),
  'DaemonSet: matchFields only': () =>
    daemonSet('d5', 'gpu', required({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n-pci'] }] })),
  'DaemonSet: Exists with an empty key': () => daemonSet('d6', 'gpu', { tolerations: [{ operator: 'Exists' }] }),
  'DaemonSet of an outsider: the gpu toleration': () => daemonSet('d7', 'apps', { tolerations: [pci] }),
  'CronJob: a foreign toleration': () => cronJob('d8', 'gpu', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
  'StatefulSet: a foreign toleration': () => ({
    ...deployment('d10', 'gpu', { tolerations: [pci] }),
    kind: 'StatefulSet',
  }),
  'ReplicaSet: nodeSelector for the other group': () => ({
    ...deployment('d11', 'gpu', { nodeSelector: { dedicated: 'pci' } }),
    kind: 'ReplicaSet',
  }),
  'Job: Exists on the group key': () => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'd12', namespace: 'gpu' },
    spec: {
      template: { spec: { containers: [container], restartPolicy: 'Never', tolerations: [{ key: 'dedicated', operator: 'Exists' }] } },
    },
  }),
  'ReplicationController: a foreign toleration': () => ({
    apiVersion: 'v1',
    kind: 'ReplicationController',
    metadata: { name: 'd13', namespace: 'gpu' },
    spec: { selector: labels, template: { metadata: { labels }, spec: { containers: [container], tolerations: [pci] } } },
  }),
  'PodTemplate: a foreign toleration': () => ({
    apiVersion: 'v1',
    kind: 'PodTemplate',
    metadata: { name: 'd14', namespace: 'apps' },
    template: { spec: { containers: [container], tolerations: [pci] } },
  }),
  'CronJob: DoesNotExist on the group label': () =>
    cronJob('d9', 'gpu', required({ matchExpressions: [expr('dedicated', 'DoesNotExist')] })),
};

describe('red team: the exported tenancy policies refuse what the webhook refuses, and store the same pods', { skip }, () => {
  let dir: string;
  let webhook: ToleratorOnCluster;
  let policyPlane: ControlPlane;
  let policies: k8s.KubernetesObjectApi;
  const version = skip === false ? controlPlaneMinor() : '1.35';

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-redteam-'));
    const policyDir = join(dir, 'tenancy-policies');
    mkdirSync(policyDir);
    copyFileSync(join(REPO_ROOT, 'policies', `${POLICY}.yaml`), join(policyDir, `${POLICY}.yaml`));
    const documents = exportedDocuments({ ...defaultExportSettings(version), tenancyPolicies: loadPolicies(policyDir).policies });
    // The comparison-operator gate on (alpha on 1.35 to 1.37) on both API servers and the webhook,
    // so that a Gt/Lt toleration reaches the tenancy rules instead of the API server's validation.
    const comparison = 'TaintTolerationComparisonOperators=true';
    webhook = await startToleratorOnCluster({
      dir: join(dir, 'webhook'),
      plane: { disableAdmissionPlugins: ['DefaultTolerationSeconds'], featureGates: comparison },
      serveArgs: ['--policies', policyDir, '--feature-gates', comparison],
    });
    const mutating = mutatingPolicyPlaneOptions(version);
    policyPlane = await startControlPlane({
      dir: join(dir, 'policies'),
      temporaryDir: true,
      disableAdmissionPlugins: ['DefaultTolerationSeconds'],
      ...mutating,
      featureGates: [mutating.featureGates, comparison].filter((gate) => gate !== undefined).join(','),
    });
    policies = clientsFor(policyPlane.kubeconfig).objects;
    for (const [name, nsLabels] of Object.entries(namespaces)) {
      const object: Manifest = { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: nsLabels } };
      await createObject(webhook.objects, object);
      await createObject(policies, object);
    }
    await installExportedPolicies(policyPlane.kubeconfig, documents, 'apps');
    await pollUntil('the webhook giving g2024 pods the group toleration', async () => {
      const probe = plain(await createObject(webhook.objects, pod('probe', 'g2024', {}), 'All')) as Manifest;
      const tolerations = (podSpecOf(probe).tolerations ?? []) as { key?: string }[];
      return tolerations.some((toleration) => toleration.key === 'dedicated') ? true : undefined;
    });
  });

  after(async () => {
    await (webhook as ToleratorOnCluster | undefined)?.stop();
    await (policyPlane as ControlPlane | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const [title, build] of Object.entries(attacks)) {
    it(`${title}: the policies decide as the webhook`, async () => {
      const fromWebhook = await judge(webhook.objects, build());
      const fromPolicies = await judge(policies, build());
      const both = `webhook ${describeVerdict(fromWebhook)}\npolicies ${describeVerdict(fromPolicies)}`;
      if (process.env.REDTEAM_VERBOSE === '1') console.log(`VERDICT ${title}\n  ${both}`);
      assert.equal('admitted' in fromPolicies, 'admitted' in fromWebhook, both);
      if ('admitted' in fromPolicies && 'admitted' in fromWebhook) {
        assert.deepEqual(placement(fromPolicies.admitted), placement(fromWebhook.admitted), both);
      }
    });
  }

  it('a scheduling-gated tenant pod: an UPDATE that adds a nodeSelector for another group is taken by both, and the pod still requires its group', async () => {
    // Mutable scheduling directives (KEP-3838): while gated, nodeSelector and required terms may
    // only be narrowed. The pair the pod got at create stays ANDed in, so narrowing cannot escape.
    for (const objects of [webhook.objects, policies]) {
      const stored = await createObject(objects, pod('gated', 'gpu', { schedulingGates: [{ name: 'example.com/wait' }] }));
      const spec = stored.spec as Spec;
      const updated = plain(
        await objects.replace(asKubernetesObject({ ...stored, spec: { ...spec, nodeSelector: { dedicated: 'pci' } } })),
      ) as Manifest;
      assert.deepEqual((updated.spec as Spec).affinity, {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [expr('dedicated', 'In', ['gpu'])] }],
          },
        },
      });
    }
  });

  it("a kubelet's mirror pod in a tenant namespace with a foreign toleration: left alone by both (node credentials, not a tenant's)", async () => {
    const stored: Manifest[] = [];
    for (const [objects, plane] of [
      [webhook.objects, webhook.plane],
      [policies, policyPlane],
    ] as const) {
      const node = await createObject(objects, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n-mirror' } });
      const kubelet = clientsFor(await plane.kubeconfigFor('system:node:n-mirror', ['system:nodes'])).objects;
      const uid = (node.metadata as { uid: string }).uid;
      stored.push(
        await createObject(
          kubelet,
          pod(
            'static-n-mirror',
            'gpu',
            { nodeName: 'n-mirror', tolerations: [{ operator: 'Exists' }] },
            {
              annotations: { 'kubernetes.io/config.mirror': 'f3a9c0de5b7e4d21' },
              ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n-mirror', uid, controller: true }],
            },
          ),
        ),
      );
    }
    const [fromWebhook, fromPolicies] = stored as [Manifest, Manifest];
    assert.deepEqual(placement(fromWebhook).tolerations, [{ operator: 'Exists' }]);
    assert.deepEqual(placement(fromPolicies), placement(fromWebhook));
  });

  it("a namespace moved to another group after its pod exists: an UPDATE adding nothing is taken, one adding the old group's toleration in another form is refused, by both", async () => {
    const moving = (group: string): Manifest => ({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'moving', labels: { dedicated: group } },
    });
    const created: Manifest[] = [];
    for (const objects of [webhook.objects, policies]) {
      await createObject(objects, moving('gpu'));
      created.push(await createObject(objects, pod('old', 'moving', {})));
      const namespace = plain(await objects.read({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'moving' } })) as Manifest;
      await objects.replace(asKubernetesObject({ ...namespace, metadata: { ...namespace.metadata, labels: { dedicated: 'pci' } } }));
    }
    // The webhook reads namespaces from its informer: wait until it sees the new group.
    await pollUntil('the webhook seeing moving in group pci', async () => {
      const probe = await createObject(webhook.objects, pod('probe', 'moving', {}), 'All');
      const tolerations = (podSpecOf(probe).tolerations ?? []) as { value?: string }[];
      return tolerations.some((toleration) => toleration.value === 'pci') ? true : undefined;
    });
    for (const [index, objects] of [webhook.objects, policies].entries()) {
      const old = created[index] as Manifest;
      const spec = old.spec as Spec;
      const relabelled = { ...old, metadata: { ...old.metadata, labels: { touched: 'yes' } } };
      plain(await objects.replace(asKubernetesObject(relabelled), undefined, 'All'));
      const oldGroup = { key: 'dedicated', operator: 'Equal', value: 'gpu' };
      const widened = { ...old, spec: { ...spec, tolerations: [...((spec.tolerations ?? []) as unknown[]), oldGroup] } };
      const error = await objects.replace(asKubernetesObject(widened), undefined, 'All').then(
        () => undefined,
        (caught: unknown) => apiError(caught),
      );
      assert.equal(error?.code, 403, `side ${index}: ${JSON.stringify(error?.status.message)}`);
    }
  });

  it('a Deployment UPDATE that adds a foreign toleration is refused by both; one that changes only replicas is taken', async () => {
    for (const objects of [webhook.objects, policies]) {
      const stored = await createObject(objects, deployment('upd', 'gpu', {}));
      const spec = stored.spec as Spec;
      const template = spec.template as Spec;
      const withToleration: Manifest = {
        ...stored,
        spec: { ...spec, template: { ...template, spec: { ...(template.spec as Spec), tolerations: [pci] } } },
      };
      const error = await objects.replace(asKubernetesObject(withToleration), undefined, 'All').then(
        () => undefined,
        (caught: unknown) => apiError(caught),
      );
      assert.equal(error?.code, 403, JSON.stringify(error?.status.message));
      plain(await objects.replace(asKubernetesObject({ ...stored, spec: { ...spec, replicas: 3 } }), undefined, 'All'));
    }
  });

  it('a DaemonSet UPDATE that strips the pair from its template: both give it back, stored the same', async () => {
    const stored: Manifest[] = [];
    for (const objects of [webhook.objects, policies]) {
      const created = await createObject(objects, daemonSet('strip', 'gpu', {}));
      const spec = created.spec as Spec;
      const template = spec.template as Spec;
      const stripped = { ...(template.spec as Spec), tolerations: [], affinity: undefined };
      const updated = plain(
        await objects.replace(asKubernetesObject({ ...created, spec: { ...spec, template: { ...template, spec: stripped } } })),
      ) as Manifest;
      stored.push(updated);
    }
    const [fromWebhook, fromPolicies] = stored as [Manifest, Manifest];
    assert.ok(JSON.stringify(placement(fromWebhook)).includes('"gpu"'), JSON.stringify(placement(fromWebhook)));
    assert.deepEqual(placement(fromPolicies), placement(fromWebhook));
  });

  it('the CEL cost budget on the tenancy policy: a contradiction hidden at the end of huge NotIn lists is still refused', async () => {
    // 16 requirements of 20,000 values each (320,000 values, about 2.9 MB), the group as the very
    // last value: the mutation's termHoldsGroup stops at each requirement's operator, the
    // guarantee's admitsGroup walks every value (`group in values`) to find it. Whether within
    // the budget (refused by the rule) or past it (refused by failurePolicy Fail), never admitted.
    const values = Array.from({ length: 20_000 }, (_, i) => `v${i}`);
    const hidden = (): Manifest =>
      pod(
        'notin',
        'gpu',
        required({
          matchExpressions: Array.from({ length: 16 }, (_, i) => expr('dedicated', 'NotIn', i === 15 ? [...values, 'gpu'] : values)),
        }),
      );
    const fromWebhook = await judge(webhook.objects, hidden());
    const fromPolicies = await judge(policies, hidden());
    const both = `webhook ${describeVerdict(fromWebhook).slice(0, 300)}\npolicies ${describeVerdict(fromPolicies).slice(0, 300)}`;
    assert.ok('refused' in fromWebhook && fromWebhook.refused === 403, both);
    assert.ok('refused' in fromPolicies && [403, 422].includes(fromPolicies.refused), both);
  });

  it('a ValidatingAdmissionPolicy past its CEL cost budget refuses with failurePolicy Fail, and silently admits with Ignore', async () => {
    // Not an exported object: the API server behaviour every exported failurePolicy: Fail relies
    // on. A quadratic rule (every pair of tolerations) over 2,000 tolerations costs about 4
    // million, past the per-expression limit of 1 million (celconfig.PerCallLimit).
    const costly = (failurePolicy: string): Manifest[] => [
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: `redteam-costly-${failurePolicy.toLowerCase()}` },
        spec: {
          failurePolicy,
          matchConstraints: {
            resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
          },
          validations: [
            {
              expression:
                "object.spec.?tolerations.orValue([]).all(a, object.spec.?tolerations.orValue([]).all(b, a.?key.orValue('') != '' || b.?key.orValue('') != ''))",
            },
          ],
        },
      },
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicyBinding',
        metadata: { name: `redteam-costly-${failurePolicy.toLowerCase()}` },
        spec: {
          policyName: `redteam-costly-${failurePolicy.toLowerCase()}`,
          validationActions: ['Deny'],
          matchResources: {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': `costly-${failurePolicy.toLowerCase()}` } },
          },
        },
      },
    ];
    const tolerations = Array.from({ length: 2_000 }, (_, i) => ({ key: `example.com/k${i}`, operator: 'Exists' }));
    for (const failurePolicy of ['Fail', 'Ignore']) {
      const namespace = `costly-${failurePolicy.toLowerCase()}`;
      // Outside the exported policies (tolerator.dev/ignore), so only this policy judges.
      await createObject(policies, {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: namespace, labels: { 'tolerator.dev/ignore': 'true' } },
      });
      for (const object of costly(failurePolicy)) await createObject(policies, object);
    }
    const probe = (namespace: string): Manifest => pod('probe', namespace, { tolerations });
    // The policy takes effect a moment after it is stored: wait for the refusal.
    const refused = await pollUntil('the Fail policy refusing the costly pod', async () => {
      const verdict = await judge(policies, probe('costly-fail'));
      return 'refused' in verdict ? verdict : undefined;
    });
    assert.match(refused.message, /cost limit exceeded/);
    // Ignore: the same evaluation error lets the pod through without any decision.
    const ignored = await judge(policies, probe('costly-ignore'));
    assert.ok('admitted' in ignored, describeVerdict(ignored).slice(0, 400));
  });

  it('the CEL cost budget on the tenancy policy: a tenant pod with a huge In list on the group label is refused or stored as by the webhook, never admitted without the pair', async () => {
    // 200,000 values of about 9 bytes: 1.8 MB, under the 3 MiB request limit.
    const values = ['gpu', ...Array.from({ length: 200_000 }, (_, i) => `v${i}`)];
    const huge = (): Manifest => pod('huge', 'gpu', required({ matchExpressions: [expr('dedicated', 'In', values)] }));
    const fromWebhook = await judge(webhook.objects, huge());
    assert.ok('admitted' in fromWebhook, describeVerdict(fromWebhook).slice(0, 500));
    const fromPolicies = await judge(policies, huge());
    if ('admitted' in fromPolicies) {
      assert.deepEqual(placement(fromPolicies.admitted), placement(fromWebhook.admitted));
    } else {
      assert.ok([403, 422].includes(fromPolicies.refused), describeVerdict(fromPolicies).slice(0, 500));
      assert.match(fromPolicies.message, /cost limit exceeded|denied request/);
    }
  });
});
