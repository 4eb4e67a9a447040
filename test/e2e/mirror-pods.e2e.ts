/**
 * Mirror pods through a real kube-apiserver with the Node authorizer and NodeRestriction on, and
 * the webhooks as the Helm chart renders them (`helm template`; test/e2e/tenancy.e2e.ts uses the
 * kustomize render, so both installs' matchConditions run in a real API server).
 *
 * A kubelet (user `system:node:NAME` in group `system:nodes`) creates a mirror pod for each of
 * its static pods; the webhooks' `exclude-mirror-pods` matchCondition keeps the API server from
 * calling tolerator for those at all. The annotation alone, which anyone may write, counts for
 * nothing, and neither does a username that only looks like a kubelet's: the API server's own
 * test of a node (NodeRestriction's NodeIdentity) wants the prefix and the group.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { createFakeNodes } from '../cluster/fake-node.js';
import {
  clientsFor,
  createObject,
  refusal,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';
import { helmBinary } from '../support/helm-binary.js';

const helm = helmBinary();
const skip = skipWithoutControlPlane() || ('skip' in helm ? `${helm.skip}: the Helm-rendered webhooks cannot be installed` : false);

const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };
const gpuToleration = { key: 'dedicated', operator: 'Equal', value: 'gpu', effect: 'NoSchedule' };

const mirrorAnnotation = 'kubernetes.io/config.mirror';
/** A user that is named like a kubelet but is not in system:nodes (RBAC lets it write pods in ml). */
const impostor = 'system:node:impostor';

interface PodShape extends Manifest {
  metadata: { name: string; annotations?: Record<string, string>; ownerReferences?: unknown[] };
  spec: { tolerations?: unknown[]; affinity?: unknown; nodeName?: string };
}

describe('mirror pods through kube-apiserver with NodeRestriction (Helm-rendered webhooks)', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let dir: string;
  /** The Nodes' UIDs: a mirror pod's controller reference must name its node's (NodeRestriction). */
  const uids = new Map<string, string>();
  let kubelet: (node: string) => Promise<k8s.KubernetesObjectApi>;
  let alice: k8s.KubernetesObjectApi;
  let impostorClient: k8s.KubernetesObjectApi;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-mirror-'));
    cluster = await startToleratorOnCluster({ dir, webhooks: 'helm', serveArgs: ['--policies', join(REPO_ROOT, 'policies')] });
    await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ml', labels: { dedicated: 'gpu' } } });
    const nodes = await createFakeNodes(cluster.objects, {
      'gpu-1': { labels: { dedicated: 'gpu' }, taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
      'pci-1': { labels: { dedicated: 'pci' }, taints: [{ key: 'dedicated', value: 'pci', effect: 'NoSchedule' }] },
    });
    for (const node of nodes) uids.set(String(node.metadata.name), String(node.metadata.uid));
    // An ordinary tenant, and the impostor, may write pods in ml (what a namespace admin grants).
    await createObject(cluster.objects, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'pod-writer', namespace: 'ml' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'list'] }],
    });
    await createObject(cluster.objects, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'pod-writers', namespace: 'ml' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-writer' },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice' },
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: impostor },
      ],
    });
    const plane = cluster.plane;
    kubelet = async (node) => clientsFor(await plane.kubeconfigFor(`system:node:${node}`, ['system:nodes'])).objects;
    alice = clientsFor(await plane.kubeconfigFor('alice', [])).objects;
    impostorClient = clientsFor(await plane.kubeconfigFor(impostor, [])).objects;
  });
  after(async () => {
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A pod as a kubelet mirrors a static pod: the annotation, bound to `node`, owned by that Node. Burstable. */
  const mirrorPod = (name: string, node: string): Manifest => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'ml',
      annotations: { [mirrorAnnotation]: 'f3a9c0de5b7e4d21' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node, uid: uids.get(node), controller: true }],
    },
    spec: {
      nodeName: node,
      containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '10m' } } }],
    },
  });

  /**
   * Whether tolerator logged a review of pod `name`. Its log lines reach this process through a
   * pipe after its answers, so a pod created afterwards is waited for first: once its reviews are
   * in, any line about `name` would be too.
   */
  const everReviewed = async (name: string): Promise<boolean> => {
    const marker = `after-${name}`;
    await createObject(cluster.objects, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: marker, namespace: 'ml' },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    });
    assert.deepEqual(await cluster.reviewedSides(marker, 'CREATE'), ['mutate', 'validate']);
    return (cluster.tolerator()?.logs ?? []).some((entry) => entry.msg === 'admission review' && entry.name === name);
  };

  it("a kubelet's mirror pod is sent to neither webhook: stored as the kubelet wrote it, absent from tolerator's log", async () => {
    const kubeletGpu = await kubelet('gpu-1');
    const stored = (await createObject(kubeletGpu, mirrorPod('static-web-gpu-1', 'gpu-1'))) as PodShape;
    // Only the API server's own DefaultTolerationSeconds: no memory-pressure for this Burstable
    // pod, and no group toleration or requirement, though ml is a namespace of group gpu.
    assert.deepEqual(stored.spec.tolerations, [notReady, unreachable]);
    assert.equal(stored.spec.affinity, undefined);
    assert.equal(await everReviewed('static-web-gpu-1'), false);

    // Not validated either: on another group's node, where any other pod of ml is refused.
    const kubeletPci = await kubelet('pci-1');
    const foreign = (await createObject(kubeletPci, mirrorPod('static-web-pci-1', 'pci-1'))) as PodShape;
    assert.equal(foreign.spec.nodeName, 'pci-1');
    assert.equal(await everReviewed('static-web-pci-1'), false);
  });

  it('a kubelet can mirror only onto its own node (NodeRestriction), which is what makes skipping its pods safe', async () => {
    const kubeletGpu = await kubelet('gpu-1');
    const answer = await refusal(createObject(kubeletGpu, mirrorPod('elsewhere', 'pci-1')));
    assert.equal(answer.code, 403);
    assert.equal(answer.status.reason, 'Forbidden');
    assert.equal(
      answer.status.message,
      'pods "elsewhere" is forbidden: node "gpu-1" can only create pods with spec.nodeName set to itself',
    );
  });

  it('the mirror annotation written by an ordinary user counts for nothing: the pod is reviewed and mutated', async () => {
    const stored = (await createObject(alice, mirrorPod('alice-mirror', 'gpu-1'))) as PodShape;
    assert.equal(stored.metadata.annotations?.[mirrorAnnotation], 'f3a9c0de5b7e4d21');
    assert.deepEqual(stored.spec.tolerations, [notReady, unreachable, memoryPressure, gpuToleration]);
    assert.deepEqual(stored.spec.affinity, {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'dedicated', operator: 'In', values: ['gpu'] }] }],
        },
      },
    });
    assert.deepEqual(await cluster.reviewedSides('alice-mirror', 'CREATE'), ['mutate', 'validate']);
  });

  it("an ordinary user's pod made to look exactly like a kubelet's mirror pod is refused on another group's node", async () => {
    const answer = await refusal(createObject(alice, mirrorPod('alice-intrudes', 'pci-1')));
    assert.equal(answer.code, 403);
    assert.equal(answer.status.reason, 'Forbidden');
    assert.equal(
      answer.status.message,
      'admission webhook "validate.tolerator.dev" denied the request: spec.nodeName "pci-1" is a node of group "pci" (policy "dedicated-by-namespace-label"); namespace "ml" belongs to group "gpu", and only an infrastructure namespace may reach other groups\' nodes',
    );
  });

  it('a user named system:node:<name> outside the group system:nodes is no kubelet: its mirror-annotated pod is reviewed and refused', async () => {
    // The API server does not take it for a node either: NodeRestriction would refuse a node's pod
    // for another node, and the Node authorizer would not authorize it; RBAC does, as for any user.
    const answer = await refusal(createObject(impostorClient, mirrorPod('impostor-intrudes', 'pci-1')));
    assert.equal(answer.code, 403);
    assert.equal(answer.status.reason, 'Forbidden');
    assert.match(
      answer.status.message ?? '',
      /^admission webhook "validate\.tolerator\.dev" denied the request: spec\.nodeName "pci-1" is a node of group "pci"/,
    );
    const stored = (await createObject(impostorClient, mirrorPod('impostor-mirror', 'gpu-1'))) as PodShape;
    assert.deepEqual(stored.spec.tolerations, [notReady, unreachable, memoryPressure, gpuToleration]);
    assert.deepEqual(await cluster.reviewedSides('impostor-mirror', 'CREATE'), ['mutate', 'validate']);
  });
});
