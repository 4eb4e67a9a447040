/**
 * `tolerator export`'s manifests on a real kube-apiserver (the binaries' minor: v1beta1 with the
 * gate and runtime-config on 1.35, v1 from 1.36), beside a second API server running tolerator's
 * webhook with the same (default) flags. What the policy side stores is compared with what the
 * webhook side stores for a set of named pods; then what export does not cover, and how it shows:
 * the namespace annotations it cannot decode (refused, with the reason), mirror pods (left alone,
 * as by the webhooks), and the CEL cost budget (a pod too large for it is refused, not admitted
 * without its tolerations). The generated cases are test/differential/export.differential.ts.
 *
 * Both sides run the shipped namespace-label TenancyPolicy (alone in a `--policies` directory:
 * export translates one), so the tenancy pair and guarantee are applied too: named tenant,
 * outsider, exempt and infrastructure pods, and the stricter nodeName rule.
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
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

type Toleration = { key?: string; operator?: string; value?: string; effect?: string; tolerationSeconds?: number };
type PodShape = Manifest & { spec: { tolerations?: Toleration[]; affinity?: unknown } };

const POLICY = 'dedicated-by-namespace-label';

const burstable = { requests: { cpu: '100m', memory: '64Mi' } };

function pod(name: string, namespace: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, ...metadata },
    spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }], ...spec },
  };
}

/** The named cases: each stored on both sides, and the stored tolerations compared. */
const cases: Record<string, (namespace: string) => Manifest> = {
  'a Burstable pod gets the node-condition defaults and memory-pressure': (ns) =>
    pod('burstable', ns, { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: burstable }] }),
  'a BestEffort pod gets the defaults only': (ns) => pod('besteffort', ns, {}),
  // In the infrastructure namespace: anywhere else a wildcard toleration reaches every
  // dedicated-node group, and the tenancy policy refuses it on both sides (the tenancy cases).
  'a pod whose wildcard toleration covers everything gets nothing': () =>
    pod('wildcard', 'agents', { tolerations: [{ operator: 'Exists' }], containers: [{ name: 'c', image: 'x', resources: burstable }] }),
  "MergeTolerations drops the pod's own toleration that memory-pressure covers": (ns) =>
    pod('merged', ns, {
      containers: [{ name: 'c', image: 'x', resources: burstable }],
      tolerations: [
        { key: 'node.kubernetes.io/memory-pressure', operator: 'Equal', value: 'x', effect: 'NoSchedule' },
        { key: 'example.com/a', operator: 'Exists' },
        { key: 'example.com/a', operator: 'Equal', value: 'v' },
      ],
    }),
  "a host-network DaemonSet pod gets the controller's set, replacing a bounded not-ready": (ns) =>
    pod(
      'daemon',
      ns,
      {
        hostNetwork: true,
        tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 }],
      },
      {
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent', uid: '6f1b3c3e-0000-4000-8000-00000000000a', controller: true },
        ],
      },
    ),
  'a pod-level request makes the pod Burstable (PodLevelResources)': (ns) =>
    pod('pod-level', ns, { resources: { requests: { cpu: '100m' } } }),
};

describe('tolerator export on kube-apiserver: the policies beside the webhook', { skip }, () => {
  let dir: string;
  let webhook: ToleratorOnCluster;
  let policyPlane: ControlPlane;
  let policies: k8s.KubernetesObjectApi;
  const version = skip === false ? controlPlaneMinor() : '1.35';
  let documents: Manifest[] = [];

  const namespace = async (name: string, annotations?: Record<string, string>, labels?: Record<string, string>): Promise<void> => {
    const object: Manifest = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name, ...(annotations ? { annotations } : {}), ...(labels ? { labels } : {}) },
    };
    await createObject(webhook.objects, object);
    await createObject(policies, object);
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-export-'));
    const policyDir = join(dir, 'tenancy-policies');
    mkdirSync(policyDir);
    copyFileSync(join(REPO_ROOT, 'policies', `${POLICY}.yaml`), join(policyDir, `${POLICY}.yaml`));
    documents = exportedDocuments({ ...defaultExportSettings(version), tenancyPolicies: loadPolicies(policyDir).policies });
    // The webhook's API server has no MutatingAdmissionPolicy API on 1.35 (gate off, as by
    // default): the first test shows what export's header says about it.
    webhook = await startToleratorOnCluster({
      dir: join(dir, 'webhook'),
      plane: { disableAdmissionPlugins: ['DefaultTolerationSeconds'] },
      serveArgs: ['--policies', policyDir],
    });
    policyPlane = await startControlPlane({
      dir: join(dir, 'policies'),
      temporaryDir: true,
      disableAdmissionPlugins: ['DefaultTolerationSeconds'],
      ...mutatingPolicyPlaneOptions(version),
    });
    policies = clientsFor(policyPlane.kubeconfig).objects;
    await namespace('apps');
    await namespace('gpu', undefined, { dedicated: 'gpu' });
    await namespace('gpu-exempt', undefined, { dedicated: 'gpu', 'tolerator.dev/exempt': 'true' });
    await namespace('agents', undefined, { 'tolerator.dev/node-infrastructure': 'true' });
    await installExportedPolicies(policyPlane.kubeconfig, documents, 'apps');
    // The webhook reads namespaces from its cluster state: wait until it sees the gpu label.
    await pollUntil('the webhook giving gpu pods the group toleration', async () => {
      const probe = plain(await createObject(webhook.objects, pod('probe', 'gpu', {}), 'All')) as PodShape;
      return (probe.spec.tolerations ?? []).some((toleration) => toleration.key === 'dedicated') ? true : undefined;
    });
  });

  after(async () => {
    await (webhook as ToleratorOnCluster | undefined)?.stop();
    await (policyPlane as ControlPlane | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`kube-apiserver ${version} stores every exported object as written`, async () => {
    // The API server adds its defaults (matchPolicy, empty selectors); what export wrote is kept.
    const written = [
      'variables',
      'mutations',
      'validations',
      'matchConditions',
      'failurePolicy',
      'reinvocationPolicy',
      'policyName',
      'validationActions',
    ];
    for (const document of documents) {
      const name = String(document.metadata.name);
      const stored = plain(await policies.read({ apiVersion: document.apiVersion, kind: document.kind, metadata: { name } })) as {
        spec: unknown;
      };
      assert.deepEqual(pick(stored.spec, written), pick(document.spec, written), `${document.kind} ${name}`);
    }
  });

  it(
    `on 1.35 the MutatingAdmissionPolicy API needs the gate and runtime-config the output names`,
    { skip: version !== '1.35' },
    async () => {
      const policy = documents.find((document) => document.kind === 'MutatingAdmissionPolicy');
      assert.ok(policy);
      const { code } = await refusal(createObject(webhook.objects, policy));
      assert.equal(code, 404);
    },
  );

  for (const [title, build] of Object.entries(cases)) {
    it(`${title}: stored as by the webhook`, async () => {
      const fromWebhook = plain(await createObject(webhook.objects, build('apps'))) as PodShape;
      const fromPolicies = plain(await createObject(policies, build('apps'))) as PodShape;
      assert.ok((fromWebhook.spec.tolerations ?? []).length > 0 || title.includes('wildcard'));
      assert.deepEqual(fromPolicies.spec.tolerations, fromWebhook.spec.tolerations);
    });
  }

  it('a namespace whose defaultTolerations annotation holds tolerations: the webhook applies it, the policy refuses with the reason', async () => {
    const defaults = JSON.stringify([{ key: 'example.com/spot', operator: 'Exists', effect: 'NoSchedule' }]);
    await namespace('annotated', { 'scheduler.alpha.kubernetes.io/defaultTolerations': defaults });
    await namespace('annotated-empty', { 'scheduler.alpha.kubernetes.io/defaultTolerations': '[]' });
    const applied = plain(await createObject(webhook.objects, pod('spot', 'annotated', {}))) as PodShape;
    assert.ok((applied.spec.tolerations ?? []).some((toleration) => toleration.key === 'example.com/spot'));
    const refused = await refusal(createObject(policies, pod('spot', 'annotated', {})));
    assert.equal(refused.code, 403);
    assert.match(
      refused.status.message ?? '',
      /namespace annotated has the annotation scheduler\.alpha\.kubernetes\.io\/defaultTolerations, whose JSON Kubernetes CEL cannot decode/,
    );
    // "[]" decodes to no defaults: nothing to apply, nothing refused.
    const empty = plain(await createObject(policies, pod('spot', 'annotated-empty', {}))) as PodShape;
    const fromWebhook = plain(await createObject(webhook.objects, pod('spot', 'annotated-empty', {}))) as PodShape;
    assert.deepEqual(empty.spec.tolerations, fromWebhook.spec.tolerations);
  });

  it("a kubelet's mirror pod is left as written, an ordinary user's pod with the annotation is not", async () => {
    const node = plain(await createObject(policies, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } })) as Manifest & {
      metadata: { uid: string };
    };
    const kubelet = clientsFor(await policyPlane.kubeconfigFor('system:node:n1', ['system:nodes'])).objects;
    // In the infrastructure namespace: elsewhere the tenancy policy's stricter nodeName rule
    // refuses the impostor, which names a node.
    const mirror = (name: string): Manifest =>
      pod(
        name,
        'agents',
        { nodeName: 'n1', containers: [{ name: 'c', image: 'x', resources: burstable }] },
        {
          annotations: { 'kubernetes.io/config.mirror': 'f3a9c0de5b7e4d21' },
          ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: node.metadata.uid, controller: true }],
        },
      );
    const stored = plain(await createObject(kubelet, mirror('static-web-n1'))) as PodShape;
    assert.equal(stored.spec.tolerations, undefined);
    const impostor = plain(await createObject(policies, mirror('not-static'))) as PodShape;
    assert.ok((impostor.spec.tolerations ?? []).some((toleration) => toleration.key === 'node.kubernetes.io/not-ready'));
  });

  const gpuToleration = { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' };
  const gpuRequirement = { key: 'dedicated', operator: 'In', values: ['gpu'] };
  const tenancyCases: Record<string, () => Manifest> = {
    "a tenant's bare pod gets the group toleration after memory-pressure, and a term requiring the group": () =>
      pod('bare', 'gpu', { containers: [{ name: 'c', image: 'x', resources: burstable }] }),
    'every required term gets the requirement ANDed in, a term holding it already is left alone': () =>
      pod('terms', 'gpu', {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] },
                { matchExpressions: [gpuRequirement] },
                { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] },
              ],
            },
          },
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 1, podAffinityTerm: { topologyKey: 'zone', labelSelector: { matchLabels: { app: 'x' } } } },
            ],
          },
        },
      }),
    'a pod that already carries the pair is left as it is': () =>
      pod('paired', 'gpu', {
        tolerations: [gpuToleration],
        affinity: {
          nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [gpuRequirement] }] } },
        },
      }),
    "an exempt namespace's pod gets no pair": () => pod('exempt', 'gpu-exempt', {}),
    "an infrastructure namespace's pod may tolerate every group": () => pod('agent', 'agents', { tolerations: [{ operator: 'Exists' }] }),
  };
  for (const [title, build] of Object.entries(tenancyCases)) {
    it(`tenancy: ${title}: stored as by the webhook`, async () => {
      const fromWebhook = plain(await createObject(webhook.objects, build())) as PodShape;
      const fromPolicies = plain(await createObject(policies, build())) as PodShape;
      assert.deepEqual(fromPolicies.spec.tolerations, fromWebhook.spec.tolerations);
      assert.deepEqual(fromPolicies.spec.affinity, fromWebhook.spec.affinity);
      if (title.startsWith("a tenant's bare pod")) {
        assert.deepEqual(fromPolicies.spec.tolerations?.at(-1), gpuToleration);
        assert.deepEqual(fromPolicies.spec.affinity, {
          nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [gpuRequirement] }] } },
        });
      }
    });
  }

  const refusedCases: Record<string, [() => Manifest, RegExp]> = {
    "a tenant tolerating every group's taint": [
      () => pod('all-groups', 'gpu', { tolerations: [{ key: 'dedicated', operator: 'Exists' }] }),
      /spec\.tolerations tolerates the dedicated taint of another group .*namespace gpu belongs to group gpu/,
    ],
    "an outsider tolerating the gpu group's taint": [
      () => pod('outsider', 'apps', { tolerations: [gpuToleration] }),
      /spec\.tolerations tolerates the dedicated taint of another group .*namespace apps belongs to no group/,
    ],
    'a tenant selecting another group': [
      () => pod('elsewhere', 'gpu', { nodeSelector: { dedicated: 'pci' } }),
      /may only run on nodes labelled dedicated=gpu, but the pod asks for other nodes/,
    ],
    'a tenant whose term excludes its group': [
      () =>
        pod('excluded', 'gpu', {
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{ matchExpressions: [{ key: 'dedicated', operator: 'NotIn', values: ['gpu'] }] }],
              },
            },
          },
        }),
      /may only run on nodes labelled dedicated=gpu/,
    ],
    'a tenant naming a node (the stricter nodeName rule)': [
      () => pod('pinned', 'gpu', { nodeName: 'n1' }),
      /spec\.nodeName is set: without a webhook the named node's dedicated-node group cannot be read/,
    ],
  };
  for (const [title, [build, reason]] of Object.entries(refusedCases)) {
    it(`tenancy: ${title}: refused on both sides, the policy saying why`, async () => {
      const fromWebhook = await refusal(createObject(webhook.objects, build(), 'All'));
      assert.equal(fromWebhook.code, 403);
      const fromPolicies = await refusal(createObject(policies, build(), 'All'));
      assert.equal(fromPolicies.code, 403);
      assert.match(
        fromPolicies.status.message ?? '',
        /ValidatingAdmissionPolicy 'tolerator\.dev-tenancy' with binding 'tolerator\.dev-tenancy' denied request: /,
      );
      assert.match(fromPolicies.status.message ?? '', reason);
    });
  }

  it("tenancy: an UPDATE that adds another group's toleration is refused on both sides, one that adds an unrelated one is not", async () => {
    for (const objects of [webhook.objects, policies]) {
      const stored = plain(await createObject(objects, pod('updated', 'gpu', {}))) as PodShape;
      const withToleration = (toleration: Toleration): Manifest => ({
        ...stored,
        spec: { ...stored.spec, tolerations: [...(stored.spec.tolerations ?? []), toleration] },
      });
      const refused = await refusal(
        objects.replace(asKubernetesObject(withToleration({ key: 'dedicated', operator: 'Exists' })), undefined, 'All'),
      );
      assert.equal(refused.code, 403);
      plain(await objects.replace(asKubernetesObject(withToleration({ key: 'example.com/a', operator: 'Exists' })), undefined, 'All'));
    }
  });

  it('the CEL cost budget: a Burstable pod of 400 tolerations is refused by the policy (failurePolicy Fail), the webhook takes it', async () => {
    const tolerations = Array.from({ length: 400 }, (_, i) => ({ key: `example.com/k${i}`, operator: 'Exists', effect: 'NoSchedule' }));
    const large = (): Manifest => pod('large', 'apps', { tolerations, containers: [{ name: 'c', image: 'x', resources: burstable }] });
    const taken = plain(await createObject(webhook.objects, large(), 'All')) as PodShape;
    assert.equal(taken.spec.tolerations?.length, 403);
    const refused = await refusal(createObject(policies, large(), 'All'));
    assert.match(
      refused.status.message ?? '',
      /policy 'tolerator\.dev-tolerations' with binding 'tolerator\.dev-tolerations' denied request: .*cost limit exceeded/s,
    );
    // 403 here, 422 for other sizes (both seen on v1.35.8 for the same policy): a refusal either way.
    assert.ok([403, 422].includes(refused.code), String(refused.code));
  });

  it('the CEL cost budget: a BestEffort pod just under 3 MiB (40,000 tolerations) is refused by the policy, never admitted without its defaults', async () => {
    // {"key":"example.com/k12345","operator":"Exists","effect":"NoSchedule"}, about 70 bytes: 40,000
    // make 2.8 MB, under the API server's 3 MiB request limit (45,000 were refused with 413).
    const tolerations = Array.from({ length: 40_000 }, (_, i) => ({ key: `example.com/k${i}`, operator: 'Exists', effect: 'NoSchedule' }));
    const huge = pod('huge', 'apps', { tolerations });
    const bytes = JSON.stringify(huge).length;
    assert.ok(bytes > 2_700_000 && bytes < 3 * 1024 * 1024, String(bytes));
    const refused = await refusal(createObject(policies, huge, 'All'));
    assert.match(refused.status.message ?? '', /cost limit exceeded/);
    assert.ok([403, 422].includes(refused.code), String(refused.code));
    try {
      const taken = plain(await createObject(webhook.objects, huge, 'All')) as PodShape;
      assert.equal(taken.spec.tolerations?.length, 40_002);
    } catch (error) {
      assert.fail(`the webhook side refused the 3 MiB pod: ${JSON.stringify(apiError(error).status.message)}`);
    }
  });
});

function pick(value: unknown, keys: readonly string[]): Record<string, unknown> {
  const record = value as Record<string, unknown>;
  return Object.fromEntries(keys.filter((key) => key in record).map((key) => [key, record[key]]));
}
