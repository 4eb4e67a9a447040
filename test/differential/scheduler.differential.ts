/**
 * kube-scheduler against `tolerator simulate`, on cases nobody chose: 24 generated fake Nodes
 * (taints of every effect, numeric and non-numeric values for Gt/Lt, labels, some cordoned) and
 * 300 generated pods (tolerations of every operator, nodeSelector, required node affinity with
 * In/NotIn/Exists/DoesNotExist/Gt/Lt and matchFields), created for real while kube-scheduler
 * runs. The node each pod is bound to must be one simulate lists as schedulable; a pod the
 * scheduler leaves Pending (PodScheduled=False, reason Unschedulable, over all 24 nodes) must be
 * one simulate lists no node for. Twice: with TaintTolerationComparisonOperators on and off, the
 * API server and the scheduler started with the same gate.
 *
 * With the gate off the API server refuses a new pod with a Gt/Lt toleration, so the pods of the
 * gate-off run are created while the gate is on, held by a scheduling gate (the scheduler leaves
 * them alone), and released once the control plane has been restarted on the same etcd with the
 * gate off, as after a rollback of the gate: the scheduler then matches their Gt/Lt tolerations
 * as it does with the gate off, never (the API server lets the scheduling gate's removal through:
 * a pod that already has Gt/Lt keeps them on an update).
 *
 * The fake Nodes take 1,000 pods each (a kubelet's default is 110): both runs' pods stay bound,
 * and a generated case that fits one node only must not be refused for the pod count, which
 * simulate does not model. Pods request nothing, so CPU and memory never decide.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import type { PodReport } from '../../src/cli/simulate.js';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import { startControlPlane, type ControlPlane } from '../cluster/control-plane.js';
import { fakeNode } from '../cluster/fake-node.js';
import { pollUntil } from '../cluster/poll.js';
import { asKubernetesObject, clientsFor, createObject, plain, type Manifest } from '../cluster/tolerator-on-cluster.js';
import {
  differentialSeed,
  generationPoolNodeArbitrary,
  nodeArbitrary,
  placementArbitrary,
  placementSpec,
  sampled,
  type GeneratedNode,
  type GeneratedPlacement,
} from './placement-cases.js';
import { decisionOf, listPods, schedulableNodes, schedulerDecisions, simulate, type Decision, type StoredPod } from './placement-oracle.js';

const skip = skipWithoutControlPlane();

const gate = 'TaintTolerationComparisonOperators';
const seed = differentialSeed();
const nodeCount = 24;
const podCount = 300;
const nodeNames = Array.from({ length: nodeCount }, (_, i) => `node-${String(i).padStart(2, '0')}`);
// Nodes and pods from seeds of their own, so that changing one generator leaves the other's cases as they were.
// Half the nodes of the generation pool (see generationPoolNodeArbitrary), half of anything.
const nodes: readonly GeneratedNode[] = [
  ...sampled(nodeArbitrary, nodeCount / 2, seed),
  ...sampled(generationPoolNodeArbitrary, nodeCount / 2, seed + 2),
];
const placements: readonly GeneratedPlacement[] = sampled(placementArbitrary(nodeNames), podCount, seed + 1);
const podName = (i: number): string => `pod-${String(i).padStart(3, '0')}`;

/** The scheduling gate that holds the gate-off run's pods until the gate is off. */
const held = 'tolerator.dev/held-for-gate-off';

/** Room for both runs' pods on any one node (see the header). */
const podsPerNode = '1000';

function nodeManifest(name: string, node: GeneratedNode): Manifest {
  const made = fakeNode(name, { labels: node.labels, taints: node.taints, unschedulable: node.unschedulable });
  const status = made.status as { capacity: Record<string, string>; allocatable: Record<string, string> };
  return {
    ...made,
    status: {
      ...status,
      capacity: { ...status.capacity, pods: podsPerNode },
      allocatable: { ...status.allocatable, pods: podsPerNode },
    },
  };
}

function podManifest(i: number, namespace: string, holdIt: boolean): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName(i), namespace },
    spec: {
      containers: [{ name: 'app', image: 'registry.example/app:1' }],
      ...placementSpec(placements[i]!),
      ...(holdIt ? { schedulingGates: [{ name: held }] } : {}),
    },
  };
}

/** Runs `task` on each item, `width` at a time: 300 creations one by one would take a minute on a busy API server. */
async function inBatches<T>(items: readonly T[], width: number, task: (item: T) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < items.length; start += width) {
    await Promise.all(items.slice(start, start + width).map(task));
  }
}

/** Eight requests at a time: kube-apiserver's max-in-flight (400) is far away; more gains nothing on two cores. */
const width = 8;

/** 5 minutes for the scheduler to decide 300 pods: it does a few hundred a second idle; two busy cores are much slower. */
const decisionTimeoutMs = 300_000;

interface Run {
  readonly decisions: Map<string, Decision>;
  readonly reports: Map<string, PodReport>;
  /** From the first creation (or release) to the last decision. */
  readonly seconds: number;
}

/** One line per disagreement: the pod's placement, what the scheduler did, what simulate said and why. */
function disagreements(run: Run): string[] {
  const found: string[] = [];
  for (let i = 0; i < podCount; i++) {
    const name = podName(i);
    const decision = run.decisions.get(name);
    const report = run.reports.get(name);
    const feasible = schedulableNodes(report);
    const stored = decision?.pod;
    const asked = JSON.stringify({
      tolerations: stored?.spec.tolerations,
      nodeSelector: stored?.spec.nodeSelector,
      affinity: stored?.spec.affinity,
    });
    if (decision === undefined || report === undefined) {
      found.push(`${name}: no ${decision === undefined ? 'decision' : 'simulate report'}`);
    } else if ('bound' in decision && !feasible.includes(decision.bound)) {
      const why = report.nodes.find((placement) => placement.node === decision.bound)?.reasons.join('; ');
      found.push(
        `${name} ${asked}: bound to ${decision.bound}; simulate: not schedulable there (${String(why)}), feasible [${feasible.join(', ')}]`,
      );
    } else if ('unschedulable' in decision && feasible.length > 0) {
      found.push(
        `${name} ${asked}: Unschedulable (${String(decision.unschedulable.message)}); simulate: feasible [${feasible.join(', ')}]`,
      );
    } else if ('unschedulable' in decision && !(decision.unschedulable.message ?? '').startsWith(`0/${nodeCount} nodes are available`)) {
      found.push(`${name}: Unschedulable over another node count than ${nodeCount}: ${String(decision.unschedulable.message)}`);
    }
  }
  return found;
}

function summary(run: Run): string {
  const bound = [...run.decisions.values()].filter((decision) => 'bound' in decision).length;
  return `${bound} bound, ${run.decisions.size - bound} Unschedulable, decided in ${run.seconds.toFixed(1)} s`;
}

describe(
  `kube-scheduler binds ${podCount} generated pods on ${nodeCount} generated nodes where tolerator simulate says (seed ${seed})`,
  { skip },
  () => {
    let dir: string;
    let plane: ControlPlane | undefined;
    const runs = new Map<boolean, Run>();

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tolerator-differential-scheduler-'));
      console.log(`scheduler.differential: seed ${seed} (TOLERATOR_DIFFERENTIAL_SEED=${seed} replays this run)`);

      // The gate on: nodes, then the gate-on pods (scheduled now) and the gate-off pods (held).
      plane = await startControlPlane({ dir, temporaryDir: true, scheduler: true, featureGates: `${gate}=true` });
      let { objects } = clientsFor(plane.kubeconfig);
      for (const [i, node] of nodes.entries()) await createObject(objects, nodeManifest(nodeNames[i]!, node));
      await waitUntilSchedulerSeesEveryNode(objects);
      for (const namespace of ['gate-on', 'gate-off']) {
        await createObject(objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
      }
      const indices = placements.map((_, i) => i);
      await inBatches(indices, width, (i) => createObject(objects, podManifest(i, 'gate-off', true)));
      let started = Date.now();
      await inBatches(indices, width, (i) => createObject(objects, podManifest(i, 'gate-on', false)));
      const decidedOn = await schedulerDecisions(objects, 'gate-on', podCount, decisionTimeoutMs);
      const secondsOn = (Date.now() - started) / 1000;
      const nodeList = plain(await objects.list('v1', 'Node'));
      runs.set(true, {
        decisions: decidedOn,
        reports: await simulate(
          [...decidedOn.values()].map((decision) => decision.pod),
          nodeList,
          { comparisonOperators: true },
        ),
        seconds: secondsOn,
      });
      await plane.stop();

      // The gate off, on the same etcd: release the held pods.
      plane = await startControlPlane({ dir, temporaryDir: true, scheduler: true, featureGates: `${gate}=false` });
      ({ objects } = clientsFor(plane.kubeconfig));
      started = Date.now();
      await inBatches(indices, width, (i) =>
        objects.patch(
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: podName(i), namespace: 'gate-off' },
            spec: { schedulingGates: null },
          } as unknown as k8s.KubernetesObject,
          undefined,
          undefined,
          undefined,
          undefined,
          k8s.PatchStrategy.MergePatch,
        ),
      );
      const decidedOff = await schedulerDecisions(objects, 'gate-off', podCount, decisionTimeoutMs);
      runs.set(false, {
        decisions: decidedOff,
        reports: await simulate(
          [...decidedOff.values()].map((decision) => decision.pod),
          plain(await objects.list('v1', 'Node')),
          { comparisonOperators: false },
        ),
        seconds: (Date.now() - started) / 1000,
      });
    });
    after(async () => {
      await plane?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    for (const on of [true, false]) {
      it(`with ${gate}=${String(on)}: every pod bound to a node simulate lists, every Unschedulable pod one simulate lists none for`, () => {
        const run = runs.get(on);
        assert.ok(run !== undefined);
        console.log(`scheduler.differential: ${gate}=${String(on)}: ${summary(run)}`);
        const found = disagreements(run);
        assert.deepEqual(
          found,
          [],
          `${found.length} disagreements between kube-scheduler and tolerator simulate (seed ${seed}):\n${found.join('\n')}`,
        );
        // Not a vacuous pass: the generated cases put pods both somewhere and nowhere.
        const bound = [...run.decisions.values()].filter((decision) => 'bound' in decision).length;
        assert.ok(bound >= podCount / 5 && podCount - bound >= podCount / 10, summary(run));
      });
    }

    it('the gate decides some pods: a pod bound with the gate on is Unschedulable with it off, by a Gt/Lt toleration alone', () => {
      const on = runs.get(true);
      const off = runs.get(false);
      assert.ok(on !== undefined && off !== undefined);
      const flipped = placements
        .map((_, i) => podName(i))
        .filter((name) => {
          const before = on.decisions.get(name);
          const afterward = off.decisions.get(name);
          return before !== undefined && 'bound' in before && afterward !== undefined && 'unschedulable' in afterward;
        });
      assert.ok(
        flipped.length > 0,
        'no generated pod depends on a Gt/Lt toleration: the gate-off run tests nothing the gate-on run does not',
      );
      for (const name of flipped) {
        const tolerations = (on.decisions.get(name)?.pod.spec.tolerations ?? []) as { operator?: string }[];
        assert.ok(
          tolerations.some(({ operator }) => operator === 'Gt' || operator === 'Lt'),
          `${name} changed with the gate without a Gt/Lt toleration`,
        );
      }
    });
  },
);

/**
 * The scheduler must know all 24 nodes before the first pod, or it could call a pod Unschedulable
 * over fewer: a probe pod that only the last node created takes (matchFields on its name, and a
 * toleration of every taint) is bound once the scheduler's node informer has delivered it, and so
 * every node before it. Then the probe is deleted.
 */
async function waitUntilSchedulerSeesEveryNode(objects: k8s.KubernetesObjectApi): Promise<void> {
  const last = nodeNames[nodeCount - 1]!;
  const probe: Manifest = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'probe-last-node', namespace: 'default' },
    spec: {
      containers: [{ name: 'app', image: 'registry.example/app:1' }],
      tolerations: [{ operator: 'Exists' }],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [last] }] }],
          },
        },
      },
    },
  };
  await createObject(objects, probe);
  await pollUntil(`the probe pod bound to ${last}`, async () => {
    const pods = await listPods(objects, 'default');
    const decision = pods.find((pod: StoredPod) => pod.metadata.name === 'probe-last-node');
    return decision !== undefined && decisionOf(decision) !== undefined && decision.spec.nodeName === last ? true : undefined;
  });
  await objects.delete(
    asKubernetesObject({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe-last-node', namespace: 'default' } }),
    undefined,
    undefined,
    0,
  );
}
