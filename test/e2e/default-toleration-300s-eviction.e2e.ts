/**
 * tolerator's default of 300 s, as a user gets it, measured: tolerator serving with its default
 * --default-unreachable-toleration-seconds (300) and the API server's own DefaultTolerationSeconds
 * off, a kwok node (test/cluster/kwok.ts) that becomes unreachable (kwok stops renewing its
 * Lease), the real node lifecycle and taint eviction controllers. The pod must stay 300 s after
 * the unreachable:NoExecute taint and be evicted then.
 *
 * Two clocks: the API server's (the taint's timeAdded, written by the node lifecycle controller;
 * the eviction's deletionTimestamp − deletionGracePeriodSeconds and its DisruptionTarget
 * condition), which decides, with no slack below (the taint eviction controller starts the pod's
 * timer when it sees the taint, after timeAdded) and EVICTION_SLACK_S above; and this process's
 * monotonic clock between receiving the tainted node and receiving the evicted pod on a watch,
 * which no wall-clock step can move, within EVICTION_SLACK_S either way (its start is this
 * process's receipt of the taint, which may lag the controller's).
 *
 * Then the healthy node fails too: with every node of the cluster down, the node lifecycle
 * controller takes the fault for its own (handleDisruption: every zone fully disrupted), lifts the
 * NoExecute taints of every node and taints none, so a pod on the last node to fail stays past its
 * own tolerationSeconds: tolerator's seconds count only on a node the controller taints.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { watchEvictions, timeMs, type EvictionWatch } from '../cluster/kwok-eviction.js';
import {
  NODE_LIFECYCLE_FOR_KWOK,
  conditionOf,
  createKwokNodes,
  makeNodeUnreachable,
  readNode,
  skipWithoutKwok,
  startKwok,
  type Kwok,
} from '../cluster/kwok.js';
import { pollUntil } from '../cluster/poll.js';
import { createObject, plain, startToleratorOnCluster, type ToleratorOnCluster } from '../cluster/tolerator-on-cluster.js';

const skip = skipWithoutKwok();

const namespace = 'default-seconds';
const DEFAULT_SECONDS = 300;
const unreachableKey = 'node.kubernetes.io/unreachable';
/**
 * The own unreachable seconds of the pod on the last node to fail: longer than the moment the node
 * lifecycle controller may taint that node before its next pass sees the whole cluster down and
 * lifts the taints (one monitor period, 1 s), so a pod that goes shows a controller that did not.
 */
const LAST_NODE_SECONDS = 30;
/** As node-failure-eviction.e2e.ts: the controller's reaction on a loaded machine (7 s) and the cut to the second (1 s). */
const EVICTION_SLACK_S = 8;

describe("tolerator's default 300 s on a node that becomes unreachable, and a cluster whose every node is down", { skip }, () => {
  let cluster: ToleratorOnCluster;
  let kwok: Kwok | undefined;
  let dir: string;
  let watch: EvictionWatch | undefined;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-default-300s-'));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { scheduler: true, nodeLifecycle: NODE_LIFECYCLE_FOR_KWOK, disableAdmissionPlugins: ['DefaultTolerationSeconds'] },
    });
    kwok = await startKwok(cluster.plane);
    // A healthy node beside it: with every node of the cluster down, the node lifecycle controller
    // taints none NoExecute (the last test).
    await createKwokNodes(cluster.objects, { healthy: {}, 'goes-unreachable': {} });
    await createObject(cluster.objects, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    await createObject(cluster.objects, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app', namespace },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': 'goes-unreachable' },
        containers: [{ name: 'app', image: 'registry.example/app:1' }],
      },
    });
    await createObject(cluster.objects, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'on-the-last-node', namespace },
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': 'healthy' },
        containers: [{ name: 'app', image: 'registry.example/app:1' }],
        tolerations: [{ key: unreachableKey, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: LAST_NODE_SECONDS }],
      },
    });
    for (const name of ['app', 'on-the-last-node']) {
      await pollUntil(`${name} Running`, async () => {
        const pod = plain(await cluster.objects.read({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace } })) as {
          status?: { phase?: string };
        };
        return pod.status?.phase === 'Running' ? true : undefined;
      });
    }
    watch = await watchEvictions(cluster.kubeconfig, namespace);
    await makeNodeUnreachable(cluster.objects, 'goes-unreachable');
  });
  after(async () => {
    watch?.stop();
    await kwok?.stop();
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a pod with the default unreachable toleration (300 s) stays 300 s after the taint and is evicted then, on the API server clock and on a monotonic one', async (t) => {
    const taint = await pollUntil(`${unreachableKey}:NoExecute`, () => watch!.taint('goes-unreachable', unreachableKey, 'NoExecute'), {
      timeoutMs: 90_000,
    });
    const eviction = await pollUntil('the eviction', () => watch!.eviction('app'), {
      timeoutMs: (DEFAULT_SECONDS + 2 * EVICTION_SLACK_S) * 1000,
      intervalMs: 500,
    });
    const stored = eviction.pod.spec.tolerations as { key: string; tolerationSeconds?: number }[];
    assert.equal(stored.find((toleration) => toleration.key === unreachableKey)?.tolerationSeconds, DEFAULT_SECONDS);
    assert.equal(eviction.disruptionTarget?.reason, 'DeletionByTaintManager');
    const serverSeconds = (eviction.deletedAtMs - timeMs(taint.taint.timeAdded!)) / 1000;
    const monotonicSeconds = (eviction.receivedMs - taint.receivedMs) / 1000;
    t.diagnostic(
      `evicted ${serverSeconds} s after the taint's timeAdded (API server), ${monotonicSeconds.toFixed(1)} s between the watch events (monotonic)`,
    );
    assert.ok(
      serverSeconds >= DEFAULT_SECONDS && serverSeconds <= DEFAULT_SECONDS + EVICTION_SLACK_S,
      `API server clock: ${serverSeconds} s, expected ${DEFAULT_SECONDS} to ${DEFAULT_SECONDS + EVICTION_SLACK_S}`,
    );
    assert.ok(
      Math.abs(monotonicSeconds - DEFAULT_SECONDS) <= EVICTION_SLACK_S,
      `monotonic clock: ${monotonicSeconds} s, expected ${DEFAULT_SECONDS} ± ${EVICTION_SLACK_S}`,
    );
  });

  it('when every node is down the node lifecycle controller lifts the NoExecute taints and evicts nothing more, whatever tolerationSeconds say', async () => {
    // upstream handleDisruption: every zone fully disrupted reads as the control plane cut off,
    // not the nodes down; markNodeAsReachable on every node, and the tainting queue stopped.
    await makeNodeUnreachable(cluster.objects, 'healthy');
    await pollUntil(
      'healthy Unknown and no node tainted unreachable:NoExecute',
      async () => {
        const [healthy, failed] = [await readNode(cluster.objects, 'healthy'), await readNode(cluster.objects, 'goes-unreachable')];
        const noExecute = [healthy, failed].flatMap((node) => (node.spec.taints ?? []).filter((taint) => taint.effect === 'NoExecute'));
        return conditionOf(healthy, 'Ready')?.status === 'Unknown' && noExecute.length === 0 ? true : undefined;
      },
      { timeoutMs: 90_000 },
    );
    const liftedAt = Date.now();
    await pollUntil('the pod on the last node to outlive its tolerationSeconds and the slack', () =>
      Date.now() > liftedAt + (LAST_NODE_SECONDS + EVICTION_SLACK_S) * 1000 ? true : undefined,
    );
    assert.equal(watch!.eviction('on-the-last-node'), undefined);
    for (const node of ['healthy', 'goes-unreachable']) {
      const current = await readNode(cluster.objects, node);
      assert.equal(conditionOf(current, 'Ready')?.status, 'Unknown', node);
      assert.deepEqual(
        (current.spec.taints ?? []).filter((taint) => taint.effect === 'NoExecute'),
        [],
        node,
      );
    }
  });
});
