/**
 * The condition taints as the Kubernetes documentation's "Taint Nodes by Condition" says they
 * behave (concepts/scheduling-eviction/taint-and-toleration), on nodes whose kubelet (kwok,
 * test/cluster/kwok.ts) reports the condition and stays Ready: the node lifecycle controller
 * taints a node NoSchedule for MemoryPressure, DiskPressure, PIDPressure and NetworkUnavailable,
 * and for spec.unschedulable (a cordon); kube-scheduler then keeps off the pods that do not
 * tolerate the taint. tolerator gives every pod but a BestEffort one the memory-pressure
 * toleration (as PodTolerationRestriction does), so on a node under memory pressure a Burstable
 * pod is scheduled and a BestEffort one is not; the DaemonSet controller gives its pods
 * memory-pressure, disk-pressure, pid-pressure and unschedulable, and network-unavailable to a
 * host-network pod only. `tolerator simulate`, given the nodes as observed, says the same
 * schedulable / not schedulable for every pod and DaemonSet.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { simulateCommand, type PodReport } from '../../src/cli/simulate.js';
import type { Placement } from '../../src/scheduling/placement.js';
import { runCommand } from '../support/command-io.js';
import { listPods, schedulerDecisions, simulate, type Decision } from '../differential/placement-oracle.js';
import {
  NODE_LIFECYCLE_FOR_KWOK,
  conditionOf,
  createKwokNodes,
  readNode,
  setNodeCondition,
  skipWithoutKwok,
  startKwok,
  taintOf,
  type Kwok,
  type LiveNode,
} from '../cluster/kwok.js';
import { pollUntil } from '../cluster/poll.js';
import { createObject, plain, startToleratorOnCluster, type Manifest, type ToleratorOnCluster } from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutKwok();

const namespace = 'conditions';
const daemonNamespace = 'daemons';

/** Each node, what makes it so, and the NoSchedule taint the node lifecycle controller should add. */
const nodes = {
  'memory-pressure': { condition: 'MemoryPressure', taint: 'node.kubernetes.io/memory-pressure' },
  'disk-pressure': { condition: 'DiskPressure', taint: 'node.kubernetes.io/disk-pressure' },
  'pid-pressure': { condition: 'PIDPressure', taint: 'node.kubernetes.io/pid-pressure' },
  'network-unavailable': { condition: 'NetworkUnavailable', taint: 'node.kubernetes.io/network-unavailable' },
  cordoned: { condition: undefined, taint: 'node.kubernetes.io/unschedulable' },
} as const;
type NodeName = keyof typeof nodes;
const nodeNames = Object.keys(nodes) as NodeName[];

/** What the documentation says of each pod on each node: scheduled or not. */
const expected: Record<NodeName, { besteffort: boolean; burstable: boolean; daemon: boolean; hostDaemon: boolean }> = {
  'memory-pressure': { besteffort: false, burstable: true, daemon: true, hostDaemon: true },
  'disk-pressure': { besteffort: false, burstable: false, daemon: true, hostDaemon: true },
  'pid-pressure': { besteffort: false, burstable: false, daemon: true, hostDaemon: true },
  'network-unavailable': { besteffort: false, burstable: false, daemon: false, hostDaemon: true },
  cordoned: { besteffort: false, burstable: false, daemon: true, hostDaemon: true },
};

function pod(name: string, node: NodeName, burstable: boolean): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': node },
      containers: [{ name: 'app', image: 'registry.example/app:1', ...(burstable ? { resources: { requests: { cpu: '100m' } } } : {}) }],
    },
  };
}

function daemonSet(name: string, hostNetwork: boolean): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace: daemonNamespace },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { ...(hostNetwork ? { hostNetwork: true } : {}), containers: [{ name: 'agent', image: 'registry.example/agent:1' }] },
      },
    },
  };
}

describe('condition taints on kwok nodes that stay Ready, as "Taint Nodes by Condition" says', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let kwok: Kwok | undefined;
  let dir: string;
  const observed = new Map<NodeName, LiveNode>();
  let decisions: Map<string, Decision>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-node-conditions-'));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { scheduler: true, nodeLifecycle: NODE_LIFECYCLE_FOR_KWOK, disableAdmissionPlugins: ['DefaultTolerationSeconds'] },
    });
    kwok = await startKwok(cluster.plane);
    await createKwokNodes(cluster.objects, Object.fromEntries(nodeNames.map((name) => [name, {}])));
    for (const name of nodeNames) {
      const { condition } = nodes[name];
      if (condition === undefined) {
        await cluster.objects.patch(
          { apiVersion: 'v1', kind: 'Node', metadata: { name }, spec: { unschedulable: true } },
          undefined,
          undefined,
          undefined,
          undefined,
          k8s.PatchStrategy.MergePatch,
        );
      } else {
        await setNodeCondition(cluster.objects, name, condition);
      }
    }
    for (const name of nodeNames) {
      let last: LiveNode | undefined;
      observed.set(
        name,
        await pollUntil(
          `${nodes[name].taint}:NoSchedule on ${name}`,
          async () => {
            last = await readNode(cluster.objects, name);
            return taintOf(last, nodes[name].taint, 'NoSchedule') === undefined ? undefined : last;
          },
          { describe: () => JSON.stringify({ conditions: last?.status?.conditions, taints: last?.spec.taints }) },
        ),
      );
    }
    for (const name of [namespace, daemonNamespace]) {
      await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    }
    for (const node of nodeNames) {
      await createObject(cluster.objects, pod(`besteffort-on-${node}`, node, false));
      await createObject(cluster.objects, pod(`burstable-on-${node}`, node, true));
    }
    await createObject(cluster.objects, daemonSet('node-agent', false));
    await createObject(cluster.objects, daemonSet('host-agent', true));
    decisions = await schedulerDecisions(cluster.objects, namespace, 2 * nodeNames.length, 90_000);
  });
  after(async () => {
    await kwok?.stop();
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('each node is tainted NoSchedule for its condition (or its cordon) and stays Ready', () => {
    for (const name of nodeNames) {
      const node = observed.get(name)!;
      assert.equal(conditionOf(node, 'Ready')?.status, 'True', name);
      const { condition } = nodes[name];
      if (condition !== undefined) assert.equal(conditionOf(node, condition)?.status, 'True', name);
      // A Ready node gets no NoExecute taint: nothing is evicted for a condition.
      assert.deepEqual(
        (node.spec.taints ?? []).filter((taint) => taint.effect === 'NoExecute'),
        [],
        name,
      );
    }
  });

  for (const node of nodeNames) {
    it(`${node}: the BestEffort pod ${expected[node].besteffort ? 'is' : 'is not'} scheduled, the Burstable pod ${expected[node].burstable ? 'is' : 'is not'}`, () => {
      for (const [kind, should] of [
        ['besteffort', expected[node].besteffort],
        ['burstable', expected[node].burstable],
      ] as const) {
        const decision = decisions.get(`${kind}-on-${node}`);
        assert.ok(decision !== undefined);
        if (should) assert.equal('bound' in decision ? decision.bound : decision.unschedulable.message, node);
        else assert.ok('unschedulable' in decision, `${kind}-on-${node} was bound`);
      }
    });
  }

  it('the DaemonSet controller runs a daemon pod where its tolerations allow: every node but network-unavailable, and a host-network daemon on every node', async () => {
    const wanted = nodeNames.filter((node) => expected[node].daemon).length + nodeNames.filter((node) => expected[node].hostDaemon).length;
    const running = await pollUntil(`${wanted} daemon pods bound and Running`, async () => {
      const daemonPods = await listPods(cluster.objects, daemonNamespace);
      const bound = daemonPods.filter(
        (candidate) => candidate.spec.nodeName !== undefined && (candidate.status as { phase?: string } | undefined)?.phase === 'Running',
      );
      return bound.length === wanted && daemonPods.length === wanted ? bound : undefined;
    });
    for (const node of nodeNames) {
      const on = running
        .filter((candidate) => candidate.spec.nodeName === node)
        .map((candidate) => candidate.metadata.name.replace(/-[a-z0-9]+$/, ''));
      assert.deepEqual(
        on.sort(),
        [...(expected[node].hostDaemon ? ['host-agent'] : []), ...(expected[node].daemon ? ['node-agent'] : [])],
        node,
      );
    }
  });

  it('tolerator simulate, given the nodes as observed, says schedulable exactly where kube-scheduler bound a pod', async () => {
    const stored = await listPods(cluster.objects, namespace);
    const nodeList = { apiVersion: 'v1', kind: 'List', items: nodeNames.map((name) => observed.get(name)) };
    const reports = await simulate(stored, nodeList, { comparisonOperators: false });
    for (const pod of stored) {
      const node = (pod.spec as { nodeSelector: Record<string, string> }).nodeSelector['kubernetes.io/hostname'] as NodeName;
      const placement = reports.get(pod.metadata.name)?.nodes.find((candidate) => candidate.node === node);
      const bound = 'bound' in decisions.get(pod.metadata.name)!;
      assert.equal(placement?.schedulable, bound, `${pod.metadata.name}: simulate ${JSON.stringify(placement)}`);
    }
  });

  it('tolerator simulate on the DaemonSets (judged by the pod their controller makes) says where the controller ran a daemon pod', async () => {
    const daemonSets = (plain(await cluster.objects.list('apps/v1', 'DaemonSet', daemonNamespace)) as { items: Manifest[] }).items;
    const nodeList = { apiVersion: 'v1', kind: 'List', items: nodeNames.map((name) => observed.get(name)) };
    const files = {
      'nodes.json': JSON.stringify(nodeList),
      'daemonsets.json': JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: daemonSets.map((item) => ({ ...item, apiVersion: 'apps/v1', kind: 'DaemonSet' })),
      }),
    };
    const run = await runCommand(simulateCommand, ['--nodes', 'nodes.json', 'daemonsets.json', '-o', 'json'], files);
    assert.equal(run.code, 0, run.stderr);
    const reports = JSON.parse(run.stdout) as PodReport[];
    for (const [name, field] of [
      ['node-agent', 'daemon'],
      ['host-agent', 'hostDaemon'],
    ] as const) {
      const report = reports.find((candidate) => candidate.pod.endsWith(`/${name}`));
      assert.ok(report !== undefined, `simulate judged ${name}: ${JSON.stringify(reports.map((candidate) => candidate.pod))}`);
      for (const node of nodeNames) {
        const placement: Placement | undefined = report.nodes.find((candidate) => candidate.node === node);
        assert.equal(placement?.schedulable, expected[node][field], `${name} on ${node}: ${JSON.stringify(placement)}`);
      }
    }
  });
});
