/**
 * The toleration defaults through a real kube-apiserver with the shipped webhooks: what a pod is
 * stored with, as the README's "What it does to a pod" promises. The API server runs its in-tree
 * DefaultTolerationSeconds (on by default, as on EKS, GKE and OKE), so these are the tolerations
 * a user of such a cluster gets.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import {
  asKubernetesObject,
  createObject,
  plain,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const notReady = { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const unreachable = { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 };
const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

const namespace = 'defaults';

function pod(
  name: string,
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> },
  tolerations?: unknown[],
): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      containers: [{ name: 'app', image: 'registry.example/app:1', ...(resources === undefined ? {} : { resources }) }],
      ...(tolerations === undefined ? {} : { tolerations }),
    },
  };
}

function tolerationsOf(object: Manifest): unknown {
  return (object.spec as { tolerations?: unknown }).tolerations;
}

describe('toleration defaults through kube-apiserver', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-defaults-'));
    cluster = await startToleratorOnCluster({ dir });
    await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
  });
  after(async () => {
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const stored = async (body: Manifest): Promise<unknown> => tolerationsOf(await createObject(cluster.objects, body));

  it('a Burstable pod is stored with not-ready, unreachable (300 s) and memory-pressure', async () => {
    assert.deepEqual(await stored(pod('burstable', { requests: { cpu: '100m' } })), [notReady, unreachable, memoryPressure]);
  });

  it('a Guaranteed pod is stored with not-ready, unreachable and memory-pressure', async () => {
    const exact = { cpu: '100m', memory: '64Mi' };
    assert.deepEqual(await stored(pod('guaranteed', { requests: exact, limits: exact })), [notReady, unreachable, memoryPressure]);
  });

  it('a BestEffort pod is stored with not-ready and unreachable only', async () => {
    assert.deepEqual(await stored(pod('besteffort')), [notReady, unreachable]);
  });

  it('a pod that already tolerates them gets no duplicates', async () => {
    const own = [
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
      { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
    ];
    assert.deepEqual(await stored(pod('tolerates', { requests: { memory: '1Mi' } }, own)), own);
  });

  it('a toleration another one covers is dropped by the merge, as the in-tree PodTolerationRestriction drops it', async () => {
    // kube-apiserver v1.35.8 with PodTolerationRestriction enabled in-tree stores exactly this
    // (tolerations.MergeTolerations keeps the superset): checked by hand, and case by case by the
    // differential suite.
    const own = [
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
      { operator: 'Exists', effect: 'NoExecute' },
      memoryPressure,
    ];
    assert.deepEqual(await stored(pod('covered', { requests: { memory: '1Mi' } }, own)), [own[1], memoryPressure]);
  });

  it('an UPDATE of a stored pod leaves its tolerations as they are', async () => {
    const created = await createObject(cluster.objects, pod('updated', { requests: { cpu: '1m' } }));
    // A PUT of the stored object with a label added: an UPDATE, as `kubectl replace` sends it.
    const changed: Manifest = { ...created, metadata: { ...created.metadata, labels: { touched: 'yes' } } };
    const updated = plain(await cluster.objects.replace(asKubernetesObject(changed))) as Manifest;
    assert.deepEqual(updated.metadata.labels, { touched: 'yes' });
    assert.deepEqual(tolerationsOf(updated), tolerationsOf(created));
    // Both webhooks saw the UPDATE (their log lines reach this process a moment after the answers).
    const sides = await cluster.reviewedSides('updated', 'UPDATE');
    assert.deepEqual(sides, ['mutate', 'validate']);
  });
});
