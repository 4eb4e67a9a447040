/**
 * kube-scheduler against what tolerator admits and what `tolerator simulate` predicts: tenant pods
 * of the shipped policies land only on their group's fake Nodes, and a pod that simulate says
 * fits nowhere stays Pending (PodScheduled=False, reason Unschedulable). simulate runs as the CLI
 * (`--mutate`, so through the same admission pipeline) on the pods as they were submitted and on
 * the Nodes and Namespaces as the API server stores them.
 *
 * A handful of cases, one per reason a pod is placed or not; the case-by-case comparison with the
 * in-tree plugins and the scheduler is the differential suite's.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT, skipWithoutControlPlane } from '../cluster/binaries.js';
import { createFakeNodes } from '../cluster/fake-node.js';
import { pollUntil } from '../cluster/poll.js';
import { createObject, plain, startToleratorOnCluster, type Manifest, type ToleratorOnCluster } from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutControlPlane();

const taint = (key: string, value: string): { key: string; value: string; effect: string } => ({ key, value, effect: 'NoSchedule' });
const zone = 'topology.kubernetes.io/zone';

const nodes = {
  'gpu-1': { labels: { dedicated: 'gpu', [zone]: 'zone-1' }, taints: [taint('dedicated', 'gpu')] },
  'gpu-2': { labels: { dedicated: 'gpu', [zone]: 'zone-2' }, taints: [taint('dedicated', 'gpu')] },
  'pci-1': { labels: { dedicated: 'pci', [zone]: 'zone-1' }, taints: [taint('dedicated', 'pci')] },
  'team-a-1': { labels: { tenant: 'team-a' }, taints: [taint('tenant', 'team-a')] },
  // team-b's only node is cordoned.
  'team-b-1': { labels: { tenant: 'team-b' }, taints: [taint('tenant', 'team-b')], unschedulable: true },
  'worker-1': { labels: { [zone]: 'zone-1' } },
  'worker-2': { labels: { [zone]: 'zone-2', disktype: 'ssd' } },
};

const namespaces: Record<string, Record<string, string>> = {
  ml: { dedicated: 'gpu' },
  // A group whose nodes have not been created yet.
  'fpga-lab': { dedicated: 'fpga' },
  shop: {},
  'team-a-dev': {},
  'team-b': {},
};

interface Case {
  readonly name: string;
  readonly namespace: string;
  readonly spec?: Record<string, unknown>;
  /** The nodes the pod may be scheduled on; empty: nowhere, it stays Pending. */
  readonly feasible: readonly string[];
}

const cases: readonly Case[] = [
  { name: 'trainer-1', namespace: 'ml', feasible: ['gpu-1', 'gpu-2'] },
  { name: 'trainer-2', namespace: 'ml', feasible: ['gpu-1', 'gpu-2'] },
  { name: 'trainer-3', namespace: 'ml', feasible: ['gpu-1', 'gpu-2'] },
  {
    // The pod's own term is ANDed with the group: zone-1 alone would also take pci-1 and worker-1.
    name: 'trainer-zone-1',
    namespace: 'ml',
    spec: {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: zone, operator: 'In', values: ['zone-1'] }] }],
          },
        },
      },
    },
    feasible: ['gpu-1'],
  },
  // A tenant pod with an empty required term (which the scheduler skips) is refused: Karpenter
  // reads such a term as no constraint (test/e2e/karpenter-provisioning.e2e.ts).
  { name: 'team-a-api', namespace: 'team-a-dev', feasible: ['team-a-1'] },
  {
    // Cordoned, but a pod that tolerates node.kubernetes.io/unschedulable may still go there.
    name: 'team-b-tolerates-cordon',
    namespace: 'team-b',
    spec: { tolerations: [{ key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' }] },
    feasible: ['team-b-1'],
  },
  { name: 'shop-web', namespace: 'shop', feasible: ['worker-1', 'worker-2'] },
  { name: 'shop-cache', namespace: 'shop', spec: { nodeSelector: { disktype: 'ssd' } }, feasible: ['worker-2'] },
  // Nowhere: a group without nodes; a tenant asking for a label none of its nodes has; a pod of
  // no group selecting a group's nodes, whose taint it may not tolerate; a group whose only node
  // is cordoned.
  { name: 'fpga-job', namespace: 'fpga-lab', feasible: [] },
  { name: 'trainer-ssd', namespace: 'ml', spec: { nodeSelector: { disktype: 'ssd' } }, feasible: [] },
  { name: 'shop-on-gpu', namespace: 'shop', spec: { nodeSelector: { dedicated: 'gpu' } }, feasible: [] },
  { name: 'team-b-api', namespace: 'team-b', feasible: [] },
];

function pod(each: Case): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: each.name, namespace: each.namespace },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1', resources: { requests: { cpu: '10m' } } }], ...each.spec },
  };
}

/** A tenant DaemonSet: the DaemonSet controller makes its pods, the scheduler binds them. */
const daemonSet: Manifest = {
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name: 'gpu-agent', namespace: 'ml' },
  spec: {
    selector: { matchLabels: { app: 'gpu-agent' } },
    template: { metadata: { labels: { app: 'gpu-agent' } }, spec: { containers: [{ name: 'agent', image: 'registry.example/agent:1' }] } },
  },
};

interface StoredPod extends Manifest {
  spec: { nodeName?: string };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

interface SimulateReport {
  readonly pod: string;
  readonly nodes: readonly { readonly node: string; readonly schedulable: boolean }[];
  readonly denied?: string;
}

describe('kube-scheduler places what tolerator admits, where tolerator simulate says', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let dir: string;
  /** Every case's pod once the scheduler has decided: bound, or marked unschedulable. */
  const decided = new Map<string, StoredPod>();
  /** simulate's schedulable nodes for each case, by pod name. */
  const predicted = new Map<string, string[]>();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-scheduling-'));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { scheduler: true, controllerManager: true },
      serveArgs: ['--policies', join(REPO_ROOT, 'policies')],
    });
    for (const [name, labels] of Object.entries(namespaces)) {
      await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
    }
    await createFakeNodes(cluster.objects, nodes);
    for (const each of cases) await createObject(cluster.objects, pod(each));
    await createObject(cluster.objects, daemonSet);

    for (const each of cases) {
      decided.set(
        each.name,
        await pollUntil(`the scheduler's decision on ${each.namespace}/${each.name}`, async () => {
          const read = plain(
            await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name: each.name, namespace: each.namespace } }),
          ) as StoredPod;
          const scheduled = read.status?.conditions?.find((condition) => condition.type === 'PodScheduled');
          return read.spec.nodeName !== undefined || scheduled?.status === 'False' ? read : undefined;
        }),
      );
    }

    // simulate on what a user would hand it: the pods as submitted, and the cluster as the API
    // server lists it (a NamespaceList and a NodeList, whose items carry no kind of their own).
    const listed = async (kind: string): Promise<unknown> => plain(await cluster.objects.list('v1', kind));
    const clusterFile = join(dir, 'cluster.json');
    writeFileSync(
      clusterFile,
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [await listed('Namespace'), await listed('Node')] }),
    );
    const podsFile = join(dir, 'pods.json');
    writeFileSync(podsFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...cases.map(pod), daemonSet] }));
    const run = spawnSync(
      process.execPath,
      [
        '--enable-experimental-regexp-engine-on-excessive-backtracks',
        '--import',
        'tsx',
        'src/main.ts',
        'simulate',
        '--nodes',
        clusterFile,
        podsFile,
        '--mutate',
        '--policies',
        join(REPO_ROOT, 'policies'),
        '-o',
        'json',
      ],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    // Exit code 1: some pod fits no node, as four cases intend.
    assert.equal(run.status, 1, run.stderr);
    for (const report of JSON.parse(run.stdout) as SimulateReport[]) {
      assert.equal(report.denied, undefined, `${report.pod} was denied by simulate --mutate`);
      predicted.set(
        report.pod.replace(/^Pod\//, ''),
        report.nodes
          .filter(({ schedulable }) => schedulable)
          .map(({ node }) => node)
          .sort(),
      );
    }
  });
  after(async () => {
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const each of cases.filter(({ feasible }) => feasible.length > 0)) {
    it(`${each.namespace}/${each.name} is bound to one of ${each.feasible.join(', ')}, the nodes simulate names`, () => {
      assert.deepEqual(predicted.get(each.name), each.feasible);
      const stored = decided.get(each.name);
      assert.ok(
        stored?.spec.nodeName !== undefined && each.feasible.includes(stored.spec.nodeName),
        `bound to ${String(stored?.spec.nodeName)}`,
      );
    });
  }

  for (const each of cases.filter(({ feasible }) => feasible.length === 0)) {
    it(`${each.namespace}/${each.name} fits no node by simulate, and the scheduler leaves it Pending as Unschedulable`, () => {
      assert.deepEqual(predicted.get(each.name), []);
      const stored = decided.get(each.name);
      assert.ok(stored !== undefined && stored.spec.nodeName === undefined, `bound to ${String(stored?.spec.nodeName)}`);
      const scheduled = stored.status?.conditions?.find((condition) => condition.type === 'PodScheduled');
      assert.equal(scheduled?.status, 'False');
      assert.equal(scheduled.reason, 'Unschedulable');
      // The scheduler's summary over every node: none of the seven fits.
      assert.match(scheduled.message ?? '', /^0\/7 nodes are available: /);
    });
  }

  it("a tenant DaemonSet's pods are bound one to each of its group's nodes, and to no other, as simulate says", async () => {
    let seen: string[] = [];
    const bound = await pollUntil(
      'both gpu-agent pods bound',
      async () => {
        const pods = (
          plain(await cluster.objects.list('v1', 'Pod', 'ml', undefined, undefined, undefined, undefined, 'app=gpu-agent')) as {
            items: StoredPod[];
          }
        ).items;
        seen = pods.map((each) => each.spec.nodeName ?? '(pending)');
        return pods.length === 2 && pods.every((each) => each.spec.nodeName !== undefined) ? seen : undefined;
      },
      { describe: () => seen.join(', ') },
    );
    assert.deepEqual(predicted.get('DaemonSet/gpu-agent'), ['gpu-1', 'gpu-2']);
    assert.deepEqual(bound.sort(), ['gpu-1', 'gpu-2']);
  });
});
