/**
 * The default tolerations at the moment they exist for: nodes that really fail. Nodes with a
 * simulated kubelet (kwok, test/cluster/kwok.ts) that renews their Leases; kube-controller-manager
 * with the node lifecycle controller and the taint eviction controller; kube-scheduler; the
 * DaemonSet controller; tolerator serving with short defaults (not-ready 15 s, unreachable 20 s)
 * and the API server's own DefaultTolerationSeconds off, so the seconds the pods carry are
 * tolerator's. One node goes NotReady (kwok's chaos Stage: Ready=False, Lease still renewed), one
 * unreachable (kwok lets go of it: its Lease is never renewed again), and through the real
 * controllers:
 * - the not-ready / unreachable NoExecute taints appear, with the Ready condition that causes them;
 * - a pod with tolerator's defaults stays its tolerationSeconds and is evicted after them;
 * - a pod that set its own tolerationSeconds keeps them and is evicted after its own;
 * - a DaemonSet's pods are never evicted;
 * - `tolerator simulate --running`, given the node as observed and the pod as stored, says the
 *   eviction time that was observed.
 *
 * Times are the API server's (the taint's timeAdded, written by the node lifecycle controller; the
 * eviction's DisruptionTarget condition and deletionTimestamp − deletionGracePeriodSeconds), all
 * clocks of this one machine, to the second. The lower bound has no slack: the taint eviction
 * controller starts a pod's timer when it sees the taint, which is after timeAdded, so
 * floor(evicted) ≥ floor(timeAdded) + tolerationSeconds whatever the load. The upper bound is
 * EVICTION_SLACK_S past it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import type { StoredPod } from '../differential/placement-oracle.js';
import { simulate } from '../differential/placement-oracle.js';
import { watchEvictions, timeMs, type EvictionWatch, type Eviction } from '../cluster/kwok-eviction.js';
import {
  NODE_LIFECYCLE_FOR_KWOK,
  conditionOf,
  createKwokNodes,
  makeNodeNotReady,
  makeNodeUnreachable,
  readNode,
  skipWithoutKwok,
  startKwok,
  type Kwok,
} from '../cluster/kwok.js';
import { pollUntil } from '../cluster/poll.js';
import { createObject, plain, startToleratorOnCluster, type Manifest, type ToleratorOnCluster } from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutKwok();

const namespace = 'failing-nodes';
const NOT_READY_SECONDS = 15;
const UNREACHABLE_SECONDS = 20;
const notReadyKey = 'node.kubernetes.io/not-ready';
const unreachableKey = 'node.kubernetes.io/unreachable';

/**
 * How long past tolerationSeconds the eviction may come: 7 s, the slack the taint-eviction
 * differential suite derived for the controller's reaction on two loaded cores (its informer, its
 * queue, a GET, a status PATCH and a DELETE: at most 2.2 s measured, times three), plus 1 s
 * because timeAdded and the eviction's times are each cut to the second.
 */
const EVICTION_SLACK_S = 8;

/** The pods of this suite, the node each runs on, and the tolerationSeconds that should evict it. */
const pods = {
  'defaults-on-not-ready': { node: 'goes-not-ready', own: undefined, evictAfter: NOT_READY_SECONDS },
  // Longer than tolerator's default: a webhook that overwrote it would evict at 15 s.
  'own-seconds-on-not-ready': { node: 'goes-not-ready', own: { key: notReadyKey, seconds: 25 }, evictAfter: 25 },
  'defaults-on-unreachable': { node: 'goes-unreachable', own: undefined, evictAfter: UNREACHABLE_SECONDS },
  // Shorter than tolerator's default: a webhook that raised it to its own would keep it 20 s.
  'own-seconds-on-unreachable': { node: 'goes-unreachable', own: { key: unreachableKey, seconds: 8 }, evictAfter: 8 },
  // On a node NotReady first, then unreachable: 90 s counted from the not-ready taint (below). 90:
  // the swap comes 11 to 31 s after the not-ready taint (measured on 1.35 and 1.36: the grace
  // period, the tainting queue's rate), so the eviction is still more than 20 s + the slack after
  // the swap, and an eviction by the unreachable seconds would show.
  'not-ready-then-unreachable': { node: 'not-ready-then-unreachable', own: { key: notReadyKey, seconds: 90 }, evictAfter: 90 },
} as const;
type PodName = keyof typeof pods;

function podManifest(name: PodName): Manifest {
  const { node, own } = pods[name];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeSelector: { 'kubernetes.io/hostname': node },
      containers: [{ name: 'app', image: 'registry.example/app:1' }],
      ...(own === undefined
        ? {}
        : { tolerations: [{ key: own.key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: own.seconds }] }),
    },
  };
}

const daemonSet: Manifest = {
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name: 'node-agent', namespace },
  spec: {
    selector: { matchLabels: { app: 'node-agent' } },
    template: { metadata: { labels: { app: 'node-agent' } }, spec: { containers: [{ name: 'agent', image: 'registry.example/agent:1' }] } },
  },
};

interface RunningPod extends StoredPod {
  readonly metadata: StoredPod['metadata'] & { ownerReferences?: { kind: string }[] };
  readonly status?: StoredPod['status'] & { phase?: string };
}

/**
 * Three healthy nodes beside the three that fail: a zone with more than two nodes down and 55 % of
 * its nodes or more (--unhealthy-zone-threshold) is partially disrupted, and a cluster of 50 nodes
 * or fewer then taints no more nodes NoExecute. Three of six is 50 %.
 */
const nodes = {
  'healthy-1': {},
  'healthy-2': {},
  'healthy-3': {},
  'goes-not-ready': {},
  'goes-unreachable': {},
  'not-ready-then-unreachable': {},
};

describe('pods on nodes that fail, through the node lifecycle and taint eviction controllers', { skip }, () => {
  let cluster: ToleratorOnCluster;
  let kwok: Kwok | undefined;
  let dir: string;
  let watch: EvictionWatch | undefined;
  /** The pods as stored and running before any node failed, by name. */
  const stored = new Map<string, RunningPod>();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-node-failure-'));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { scheduler: true, nodeLifecycle: NODE_LIFECYCLE_FOR_KWOK, disableAdmissionPlugins: ['DefaultTolerationSeconds'] },
      serveArgs: [
        '--default-not-ready-toleration-seconds',
        String(NOT_READY_SECONDS),
        '--default-unreachable-toleration-seconds',
        String(UNREACHABLE_SECONDS),
      ],
    });
    kwok = await startKwok(cluster.plane);
    await createKwokNodes(cluster.objects, nodes);
    await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    await createObject(cluster.objects, daemonSet);
    for (const name of Object.keys(pods) as PodName[]) await createObject(cluster.objects, podManifest(name));
    const expected = Object.keys(pods).length + Object.keys(nodes).length;
    let seen: RunningPod[] = [];
    await pollUntil(
      `the ${expected} pods Running on their kwok nodes`,
      async () => {
        seen = (plain(await cluster.objects.list('v1', 'Pod', namespace)) as { items: RunningPod[] }).items;
        return seen.length === expected && seen.every((pod) => pod.status?.phase === 'Running') ? true : undefined;
      },
      { describe: () => JSON.stringify(seen.map((pod) => [pod.metadata.name, pod.spec.nodeName, pod.status?.phase])) },
    );
    for (const pod of seen) stored.set(pod.metadata.name, pod);
    watch = await watchEvictions(cluster.kubeconfig, namespace);
    await makeNodeNotReady(cluster.objects, 'goes-not-ready');
    await makeNodeUnreachable(cluster.objects, 'goes-unreachable');
    await makeNodeNotReady(cluster.objects, 'not-ready-then-unreachable');
  });
  after(async () => {
    watch?.stop();
    await kwok?.stop();
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const taintSeen = (node: string, key: string) =>
    pollUntil(`${key}:NoExecute on ${node}`, () => watch!.taint(node, key, 'NoExecute'), { timeoutMs: 90_000 });
  const evictionSeen = (name: string) =>
    pollUntil(`the eviction of ${name}`, () => watch!.eviction(name), { timeoutMs: 120_000, intervalMs: 100 });

  /** Seconds from the taint's timeAdded to the eviction, on the API server's clock, and the checks every eviction passes. */
  function evictedAfter(name: PodName, eviction: Eviction, timeAdded: string): number {
    assert.equal(eviction.disruptionTarget?.status, 'True', `${name}: DisruptionTarget written before the DELETE`);
    assert.equal(eviction.disruptionTarget.reason, 'DeletionByTaintManager');
    // The pod's own grace period (30 s by default): the DELETE was graceful, not a force delete.
    assert.equal(eviction.pod.metadata.deletionGracePeriodSeconds, 30);
    const fromCondition = (timeMs(eviction.disruptionTarget.lastTransitionTime!) - timeMs(timeAdded)) / 1000;
    const fromDeletion = (eviction.deletedAtMs - timeMs(timeAdded)) / 1000;
    // Two clocks of the same machine (the controller's, the API server's), each cut to the second.
    assert.ok(Math.abs(fromCondition - fromDeletion) <= 1, `${name}: condition at ${fromCondition} s, DELETE at ${fromDeletion} s`);
    return fromDeletion;
  }

  function assertWithinBounds(t: TestContext, name: PodName, seconds: number): void {
    const expected = pods[name].evictAfter;
    t.diagnostic(`${name}: evicted ${seconds} s after the taint's timeAdded (tolerationSeconds ${expected})`);
    assert.ok(
      seconds >= expected && seconds <= expected + EVICTION_SLACK_S,
      `${name}: evicted ${seconds} s after the taint, expected ${expected} to ${expected + EVICTION_SLACK_S} s`,
    );
  }

  it('a node that reports Ready=False is tainted node.kubernetes.io/not-ready:NoExecute, with a timeAdded, and not unreachable', async () => {
    const seen = await taintSeen('goes-not-ready', notReadyKey);
    assert.equal(conditionOf(seen.node, 'Ready')?.status, 'False');
    assert.match(seen.taint.timeAdded ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(watch!.taint('goes-not-ready', unreachableKey, 'NoExecute'), undefined);
    // TaintNodesByCondition's NoSchedule twin, from the same controller: no new pod is scheduled there.
    const node = await pollUntil('not-ready:NoSchedule too', async () => {
      const current = await readNode(cluster.objects, 'goes-not-ready');
      return current.spec.taints?.some((taint) => taint.key === notReadyKey && taint.effect === 'NoSchedule') === true
        ? current
        : undefined;
    });
    assert.equal(conditionOf(node, 'Ready')?.status, 'False');
  });

  it('a node whose Lease is no longer renewed goes Unknown no sooner than the grace period after the last renewal, and is tainted unreachable:NoExecute', async () => {
    const seen = await taintSeen('goes-unreachable', unreachableKey);
    const ready = conditionOf(seen.node, 'Ready');
    assert.equal(ready?.status, 'Unknown');
    assert.equal(ready.reason, 'NodeStatusUnknown');
    assert.equal(watch!.taint('goes-unreachable', notReadyKey, 'NoExecute'), undefined);
    const lease = plain(
      await cluster.objects.read({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'goes-unreachable', namespace: 'kube-node-lease' },
      }),
    ) as { spec: { renewTime: string } };
    const sinceRenewal = (timeMs(ready.lastTransitionTime!) - timeMs(lease.spec.renewTime)) / 1000;
    // lastTransitionTime is cut to the second, renewTime is not: 1 s of the grace period may not show.
    assert.ok(
      sinceRenewal >= NODE_LIFECYCLE_FOR_KWOK.monitorGracePeriodSeconds - 1,
      `Unknown ${sinceRenewal} s after the last renewal, before the ${NODE_LIFECYCLE_FOR_KWOK.monitorGracePeriodSeconds} s grace period`,
    );
  });

  it('a node NotReady, then unreachable: the taint is swapped, and the pod goes its not-ready seconds after the not-ready taint, not its unreachable seconds after the swap', async (t) => {
    const node = 'not-ready-then-unreachable';
    const name = 'not-ready-then-unreachable';
    const notReady = await taintSeen(node, notReadyKey);
    await makeNodeUnreachable(cluster.objects, node);
    const unreachable = await taintSeen(node, unreachableKey);
    const swapped = await pollUntil('not-ready:NoExecute lifted from the node', async () => {
      const current = await readNode(cluster.objects, node);
      return current.spec.taints?.some((taint) => taint.key === notReadyKey && taint.effect === 'NoExecute') === true ? undefined : current;
    });
    assert.equal(conditionOf(swapped, 'Ready')?.status, 'Unknown');
    const eviction = await evictionSeen(name);
    const afterNotReady = evictedAfter(name, eviction, notReady.taint.timeAdded!);
    const afterUnreachable = (eviction.deletedAtMs - timeMs(unreachable.taint.timeAdded!)) / 1000;
    t.diagnostic(
      `evicted ${afterNotReady} s after the not-ready taint, ${afterUnreachable} s after the unreachable taint that replaced it`,
    );
    // upstream processPodOnNode: a pod already scheduled for eviction keeps that schedule when the
    // node's taints change, unless they are all gone, tolerated for ever, or one is not tolerated.
    assertWithinBounds(t, name, afterNotReady);
    assert.ok(
      afterUnreachable > UNREACHABLE_SECONDS + EVICTION_SLACK_S,
      `evicted ${afterUnreachable} s after the unreachable taint: its ${UNREACHABLE_SECONDS} s decided`,
    );
    // simulate judges the node as it is: the first taint gives what happened, the swapped node the
    // unreachable seconds, with a reason that says a change of taints keeps the first schedule.
    const pod = stored.get(name)!;
    const asFirst = await simulate(
      [pod],
      { apiVersion: 'v1', kind: 'List', items: [notReady.node] },
      { comparisonOperators: false, running: true },
    );
    assert.equal(asFirst.get(name)?.nodes[0]?.evictAfterSeconds, pods[name].evictAfter);
    const asSwapped = await simulate(
      [pod],
      { apiVersion: 'v1', kind: 'List', items: [swapped] },
      { comparisonOperators: false, running: true },
    );
    assert.equal(asSwapped.get(name)?.nodes[0]?.evictAfterSeconds, UNREACHABLE_SECONDS);
    assert.ok(
      asSwapped.get(name)?.nodes[0]?.reasons.some((reason) => reason.includes('first')) === true,
      JSON.stringify(asSwapped.get(name)?.nodes[0]?.reasons),
    );
  });

  for (const name of ['defaults-on-not-ready', 'defaults-on-unreachable'] as const) {
    const { node, evictAfter } = pods[name];
    const key = node === 'goes-not-ready' ? notReadyKey : unreachableKey;
    it(`${name}: stored with tolerator's ${evictAfter} s for ${key}, stays that long after the taint and is evicted after it`, async (t) => {
      const tolerations = stored.get(name)!.spec.tolerations;
      assert.deepEqual(tolerations, [
        { key: notReadyKey, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: NOT_READY_SECONDS },
        { key: unreachableKey, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: UNREACHABLE_SECONDS },
      ]);
      const taint = await taintSeen(node, key);
      assertWithinBounds(t, name, evictedAfter(name, await evictionSeen(name), taint.taint.timeAdded!));
    });
  }

  for (const name of ['own-seconds-on-not-ready', 'own-seconds-on-unreachable'] as const) {
    const { node, own } = pods[name];
    it(`${name}: keeps its own ${own.seconds} s for ${own.key} (tolerator adds only the other key) and is evicted after its own seconds`, async (t) => {
      const tolerations = stored.get(name)!.spec.tolerations as { key: string; tolerationSeconds: number }[];
      assert.deepEqual(tolerations.map((toleration) => [toleration.key, toleration.tolerationSeconds]).sort(), [
        [notReadyKey, own.key === notReadyKey ? own.seconds : NOT_READY_SECONDS],
        [unreachableKey, own.key === unreachableKey ? own.seconds : UNREACHABLE_SECONDS],
      ]);
      const taint = await taintSeen(node, own.key);
      assertWithinBounds(t, name, evictedAfter(name, await evictionSeen(name), taint.taint.timeAdded!));
    });
  }

  it("evicted pods of the NotReady node are deleted (kwok's kubelet still runs there); those of the unreachable node stay Terminating", async () => {
    await pollUntil('kwok to finish deleting the evicted pods of goes-not-ready', () =>
      watch!.deleted('defaults-on-not-ready') && watch!.deleted('own-seconds-on-not-ready') ? true : undefined,
    );
    for (const name of ['defaults-on-unreachable', 'own-seconds-on-unreachable']) {
      const pod = plain(await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace } })) as RunningPod;
      assert.ok(pod.metadata.deletionTimestamp !== undefined, `${name} marked for deletion`);
      // The node lifecycle controller marks the pods of an unreachable node not Ready (MarkPodsNotReady).
      assert.equal(pod.status?.conditions?.find((condition) => condition.type === 'Ready')?.status, 'False');
    }
  });

  it("a DaemonSet's pods carry the DaemonSet controller's not-ready and unreachable tolerations without seconds and are never evicted", async () => {
    const daemonPods = [...stored.values()].filter((pod) => pod.metadata.ownerReferences?.[0]?.kind === 'DaemonSet');
    assert.equal(daemonPods.length, Object.keys(nodes).length);
    // The longest eviction of the suite has come and gone, with its slack: a daemon pod that were
    // evicted would have been by now.
    for (const name of Object.keys(pods)) await evictionSeen(name);
    const lastEviction = Math.max(...Object.keys(pods).map((name) => watch!.eviction(name)!.deletedAtMs));
    await pollUntil('the last eviction and its slack to pass', () =>
      Date.now() > lastEviction + (1 + EVICTION_SLACK_S) * 1000 ? true : undefined,
    );
    for (const pod of daemonPods) {
      const tolerations = pod.spec.tolerations as { key?: string; effect?: string; tolerationSeconds?: number }[];
      for (const key of [notReadyKey, unreachableKey]) {
        const toleration = tolerations.find((candidate) => candidate.key === key && candidate.effect === 'NoExecute');
        assert.ok(toleration !== undefined && toleration.tolerationSeconds === undefined, `${pod.metadata.name} tolerates ${key} for ever`);
      }
      assert.equal(watch!.eviction(pod.metadata.name), undefined, `${pod.metadata.name} on ${pod.spec.nodeName} was evicted`);
    }
  });

  it('tolerator simulate --running, given each failed node as observed and each pod as stored, says the eviction time that was observed', async () => {
    for (const node of ['goes-not-ready', 'goes-unreachable']) {
      const key = node === 'goes-not-ready' ? notReadyKey : unreachableKey;
      const observed = (await taintSeen(node, key)).node;
      const onNode = [...stored.values()].filter((pod) => pod.spec.nodeName === node);
      const reports = await simulate(
        onNode,
        { apiVersion: 'v1', kind: 'List', items: [observed] },
        { comparisonOperators: false, running: true },
      );
      for (const pod of onNode) {
        const placement = reports.get(pod.metadata.name)?.nodes.find((candidate) => candidate.node === node);
        const eviction = watch!.eviction(pod.metadata.name);
        if (Object.hasOwn(pods, pod.metadata.name)) {
          const name = pod.metadata.name as PodName;
          const seconds = evictedAfter(name, eviction!, watch!.taint(node, key, 'NoExecute')!.taint.timeAdded!);
          assert.equal(placement?.evictAfterSeconds, pods[name].evictAfter, `simulate for ${name}`);
          assert.ok(seconds >= placement.evictAfterSeconds && seconds <= placement.evictAfterSeconds + EVICTION_SLACK_S);
        } else {
          assert.equal(placement?.evictAfterSeconds, null, `simulate for the daemon pod ${pod.metadata.name}`);
          assert.equal(eviction, undefined);
        }
      }
    }
  });
});
