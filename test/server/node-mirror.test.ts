/**
 * The nodes a review worker decides with (src/server/node-mirror.ts): what is sent to it before a
 * review is what changed since its last one, so the cost of keeping a worker current follows the
 * changes, not the cluster's size; and its copy ends up equal to the main thread's list, in order.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Node } from '../../src/api/types.js';
import { emptySentNodes, NodeMirror, nodeDelta, type SentNodes } from '../../src/server/node-mirror.js';

const node = (name: string, zone = 'a'): Node => ({ metadata: { name, labels: { zone } } });
const cluster = (n: number): Node[] => Array.from({ length: n }, (_, i) => node(`node-${i}`));

function sync(sent: SentNodes, mirror: NodeMirror, current: readonly Node[]): number {
  const delta = nodeDelta(sent, current);
  if (delta === undefined) return 0;
  mirror.apply(delta);
  return delta.upserts.length + (delta.names?.length ?? 0);
}

describe('the node mirror of a review worker', () => {
  it('a changed node costs one node sent, at n and at 4n nodes; an unchanged list costs nothing', () => {
    for (const n of [1_000, 4_000]) {
      const sent = emptySentNodes();
      const mirror = new NodeMirror();
      const nodes = cluster(n);
      assert.equal(sync(sent, mirror, nodes), 2 * n, 'the first review sends every node and the names');
      assert.equal(sync(sent, mirror, nodes), 0, 'nothing changed: nothing sent');
      // An informer replaces the object of a node that changed and keeps the others.
      const changed = [...nodes];
      changed[n / 2] = node(`node-${n / 2}`, 'b');
      const delta = nodeDelta(sent, changed);
      assert.deepEqual(
        { upserts: delta?.upserts.length, names: delta?.names },
        { upserts: 1, names: undefined },
        `${n} nodes: only the one that changed`,
      );
      if (delta !== undefined) mirror.apply(delta);
      assert.deepEqual(mirror.list(), changed);
      assert.equal(mirror.get(`node-${n / 2}`)?.metadata.labels?.zone, 'b');
    }
  });

  it('a node that comes or goes sends the names once, in the main thread’s order, and the copy follows', () => {
    const sent = emptySentNodes();
    const mirror = new NodeMirror();
    const nodes = cluster(5);
    sync(sent, mirror, nodes);
    const after = [nodes[0], nodes[2], nodes[4], node('node-new')].filter((item): item is Node => item !== undefined);
    const delta = nodeDelta(sent, after);
    assert.ok(delta !== undefined);
    assert.deepEqual(
      delta.upserts.map((item) => item.metadata.name),
      ['node-new'],
    );
    assert.deepEqual(delta.names, ['node-0', 'node-2', 'node-4', 'node-new']);
    mirror.apply(delta);
    assert.deepEqual(mirror.list(), after);
    assert.equal(mirror.get('node-1'), undefined, 'a node that went is gone from the copy');
    assert.equal(sent.byName.has('node-1'), false, 'and from what the main thread remembers sending');
  });
});
