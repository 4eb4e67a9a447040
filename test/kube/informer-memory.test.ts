/**
 * Memory that grows with the cluster, not with its objects' size (issue 18, item 12): a 5,000-node
 * cluster of real Nodes (19 KB of JSON each: status.images, managedFields, conditions) was listed
 * in one unpaged request and cached whole, taking a replica past its 512 MiB limit at start. The
 * informers now list in pages and keep, of every object, listed or watched, what tolerator reads.
 * Work is compared at n and 4n nodes in one test: counts of requests and bytes, not time.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startInformers, type InformerFacts, type StartInformersOptions } from '../../src/kube/informers.js';
import { heartbeatNode, storedNamespace, storedNode } from '../support/realistic-objects.js';
import { FakeApiServer, type KubeObject } from '../support/fake-api-server.js';

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };
/** Deadlines for "eventually": 50 times what these steps take on an idle machine. */
const eventuallyMs = 10_000;

async function eventually(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + eventuallyMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await sleep(10);
  }
}

/** A real-looking Node `node-<i>`, labelled and, every third, tainted. */
function realNode(i: number): KubeObject {
  return storedNode(
    {
      metadata: { name: `node-${i}`, labels: { 'kubernetes.io/hostname': `node-${i}`, 'topology.kubernetes.io/zone': `zone-${i % 3}` } },
      spec: i % 3 === 0 ? { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] } : {},
    },
    i,
  );
}

async function informersOver(
  t: TestContext,
  nodes: readonly KubeObject[],
  namespaces: readonly KubeObject[] = [],
  options: Partial<StartInformersOptions> = {},
): Promise<{ fake: FakeApiServer; facts: InformerFacts }> {
  const fake = await FakeApiServer.start();
  for (const node of nodes) fake.put('nodes', node);
  for (const namespace of namespaces) fake.put('namespaces', namespace);
  const facts = startInformers({ kubeConfig: fake.kubeConfig(), logger: silent, backoff: { initialMs: 20, maxMs: 100 }, ...options });
  t.after(async () => {
    await facts.stop();
    await fake.close();
  });
  await eventually(() => facts.isSynced(), 'both caches have synced');
  return { fake, facts };
}

const bytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

describe("memory that grows with the cluster, not with its objects' size", () => {
  it('Nodes are listed in pages: at n and 4n nodes the largest list response is the same size, and the requests grow 4 times', async (t) => {
    const n = 150;
    // Pages of 100 here (500 in production): 150 and 600 Nodes are 2 and 6 pages.
    const paging = { paging: { pageSize: { namespaces: 500, nodes: 100, runtimeclasses: 500 } } };
    const small = await informersOver(
      t,
      Array.from({ length: n }, (_, i) => realNode(i)),
      [],
      paging,
    );
    const large = await informersOver(
      t,
      Array.from({ length: 4 * n }, (_, i) => realNode(i)),
      [],
      paging,
    );
    const lists = (fake: FakeApiServer) => fake.requests.filter((request) => request.resource === 'nodes' && request.verb === 'list');
    const largest = (fake: FakeApiServer): number => Math.max(...lists(fake).map((request) => request.bytes ?? 0));

    assert.equal(small.facts.listNodes().length, n);
    assert.equal(large.facts.listNodes().length, 4 * n);
    // Pages of 100 Nodes of about 19 KB: 2 requests for 150, 6 for 600, each at most 100 Nodes.
    assert.equal(lists(small.fake).length, 2);
    assert.equal(lists(large.fake).length, 6);
    assert.ok(lists(large.fake).every((request) => request.limit === '100'));
    const oneNode = bytes(realNode(0));
    assert.ok(oneNode > 18_000, `a real Node is ${oneNode} bytes of JSON`);
    assert.ok(largest(large.fake) <= 100 * (oneNode + 100), `largest page ${largest(large.fake)} bytes`);
    assert.ok(largest(large.fake) <= largest(small.fake) * 1.05, 'the largest page does not grow with the cluster');
  });

  it('the node cache holds what is read of each Node: name, uid, labels, taints; its size is linear in the nodes, not in their status', async (t) => {
    const n = 50;
    const { facts } = await informersOver(
      t,
      Array.from({ length: 4 * n }, (_, i) => realNode(i)),
    );
    const cached = facts.getNode('node-3');
    const stored = realNode(3);
    assert.deepEqual(cached, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: {
        name: 'node-3',
        uid: stored.metadata.uid,
        resourceVersion: cached?.metadata.resourceVersion,
        labels: { 'kubernetes.io/hostname': 'node-3', 'topology.kubernetes.io/zone': 'zone-0' },
      },
      spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
    });
    const first = facts.listNodes().slice(0, n);
    const all = facts.listNodes();
    const perNode = bytes(all) / all.length;
    // A few hundred bytes kept of 19 KB: 4n nodes cost 4 times n nodes, whatever their status holds.
    assert.ok(perNode < 400, `${perNode} bytes kept per node`);
    assert.ok(bytes(all) <= 4.2 * bytes(first), `${bytes(all)} bytes for ${4 * n} nodes, ${bytes(first)} for ${n}`);
  });

  it("a watched Node is kept as a listed one is: its kubelet's status updates add nothing to the cache", async (t) => {
    const { fake, facts } = await informersOver(t, [realNode(1)]);
    await eventually(() => fake.openWatchCount('nodes') === 1, 'the node watch is open');
    const before = facts.getNode('node-1');
    fake.put('nodes', heartbeatNode(realNode(1), '2026-11-30T12:05:00Z'));
    fake.put('nodes', realNode(2));
    await eventually(() => facts.getNode('node-2') !== undefined, 'the watch delivers node-2');
    await eventually(() => facts.getNode('node-1')?.metadata.resourceVersion !== before?.metadata.resourceVersion, 'node-1 is updated');
    for (const name of ['node-1', 'node-2']) {
      const node = facts.getNode(name);
      assert.deepEqual(Object.keys(node ?? {}), ['apiVersion', 'kind', 'metadata', 'spec']);
      assert.deepEqual(Object.keys(node?.metadata ?? {}), ['name', 'uid', 'resourceVersion', 'labels']);
    }
  });

  it('a Namespace is kept as admission CEL sees it (labels, annotations, spec, status), without managedFields or ownerReferences', async (t) => {
    const namespace = storedNamespace(
      {
        metadata: {
          name: 'team-a',
          labels: { dedicated: 'a' },
          annotations: { 'scheduler.alpha.kubernetes.io/node-selector': 'pool=a' },
          ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: 'u' }],
        },
      },
      7,
    );
    const { fake, facts } = await informersOver(t, [], [namespace]);
    const cached = await facts.getNamespace('team-a');
    assert.ok(cached);
    assert.deepEqual(cached.metadata.labels, { 'kubernetes.io/metadata.name': 'team-a', dedicated: 'a' });
    assert.deepEqual(cached.metadata.annotations, { 'scheduler.alpha.kubernetes.io/node-selector': 'pool=a' });
    assert.equal(cached.metadata.managedFields, undefined);
    assert.equal(cached.metadata.ownerReferences, undefined);
    assert.deepEqual(cached.spec, { finalizers: ['kubernetes'] });
    assert.deepEqual(cached.status, { phase: 'Active' });
    // A namespace the cache lacks, read live, is kept the same way.
    fake.putUnwatched('namespaces', { ...namespace, metadata: { ...namespace.metadata, name: 'team-b' } });
    const live = await facts.getNamespace('team-b');
    assert.equal(live?.metadata.managedFields, undefined);
    assert.deepEqual(live?.metadata.labels, cached.metadata.labels);
  });

  it('a node list whose continue token expires (410 Gone) starts over from the first page, and the cache is whole', async (t) => {
    const fake = await FakeApiServer.start();
    for (let i = 0; i < 5; i++) fake.put('nodes', realNode(i));
    fake.expireListContinueTokens('nodes', 1);
    const facts = startInformers({
      kubeConfig: fake.kubeConfig(),
      logger: silent,
      paging: { pageSize: { namespaces: 500, nodes: 2, runtimeclasses: 500 } },
    });
    t.after(async () => {
      await facts.stop();
      await fake.close();
    });
    await eventually(() => facts.isSynced(), 'both caches have synced');
    assert.deepEqual(
      facts
        .listNodes()
        .map((node) => node.metadata.name)
        .sort(),
      ['node-0', 'node-1', 'node-2', 'node-3', 'node-4'],
    );
    const lists = fake.requests.filter((request) => request.resource === 'nodes' && request.verb === 'list');
    // node-0,1; the expired token; node-0,1 again; node-2,3; node-4.
    assert.deepEqual(
      lists.map((request) => request.continue === undefined),
      [true, false, true, false, false],
    );
  });

  it('watches ask for bookmarks and resume from the last one: a compaction meanwhile costs no relist of every Node', async (t) => {
    const { fake, facts } = await informersOver(t, [realNode(1)], [storedNamespace({ metadata: { name: 'ns-0' } }, 0)]);
    await eventually(() => fake.openWatchCount('nodes') === 1, 'the node watch is open');
    assert.ok(fake.requests.filter((request) => request.verb === 'watch').every((request) => request.allowWatchBookmarks === 'true'));
    // Other resources move the cluster's resourceVersion on; the Nodes do not change.
    for (let i = 1; i <= 3; i++) fake.put('namespaces', storedNamespace({ metadata: { name: `ns-${i}` } }, i));
    fake.bookmark('nodes');
    // The bookmark travels over loopback; this test waits 50 times longer than it takes on an idle machine.
    await sleep(500);
    fake.compact('nodes', 'http-410');
    fake.dropWatches('nodes');
    await eventually(() => fake.count({ resource: 'nodes', verb: 'watch' }) >= 2, 'the node watch is opened again');
    await eventually(() => fake.openWatchCount('nodes') === 1, 'the node watch is open again');
    assert.equal(fake.count({ resource: 'nodes', verb: 'list' }), 1, 'resumed from the bookmark, not relisted');
    assert.equal(facts.getNode('node-1')?.metadata.name, 'node-1');
  });
});
