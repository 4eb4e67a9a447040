import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Pod, Toleration } from '../../src/api/types.js';
import { tolerationsOf, withTolerations } from '../../src/tolerations/pod-tolerations.js';

const a: Toleration = { key: 'a', operator: 'Exists' };
const b: Toleration = { key: 'b', operator: 'Exists' };

function pod(tolerations: Toleration[] | null | undefined): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', labels: { app: 'x' } },
    spec: { containers: [{ name: 'c' }], tolerations },
    status: {},
  };
}

describe('tolerationsOf', () => {
  const rows: { name: string; given: Pod; want: readonly Toleration[] }[] = [
    { name: 'a pod without a spec has none', given: { metadata: { name: 'p' } }, want: [] },
    { name: 'absent tolerations are the empty list', given: pod(undefined), want: [] },
    { name: 'null tolerations are the empty list', given: pod(null), want: [] },
    { name: 'the list is read as it is', given: pod([a, b]), want: [a, b] },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(tolerationsOf(row.given), row.want);
    });
  }
});

describe('withTolerations', () => {
  it('copies only the pod and its spec; every other part keeps its identity', () => {
    const given = pod([a]);
    const snapshot = structuredClone(given);
    const got = withTolerations(given, [a, b]);
    assert.deepEqual(given, snapshot);
    assert.notEqual(got, given);
    assert.notEqual(got.spec, given.spec);
    assert.deepEqual(got.spec?.tolerations, [a, b]);
    assert.equal(got.spec.tolerations[0], a);
    assert.equal(got.metadata, given.metadata);
    assert.equal(got.status, given.status);
    assert.equal(got.spec.containers, given.spec?.containers);
  });

  it('the new list is a copy of the one passed in', () => {
    const list = [a];
    const got = withTolerations(pod(undefined), list);
    assert.notEqual(got.spec?.tolerations, list);
  });

  const unchanged: { name: string; given: { pod: Pod; tolerations: (p: Pod) => readonly Toleration[] } }[] = [
    {
      name: 'the same entries in the same order return the pod itself',
      given: { pod: pod([a, b]), tolerations: (p) => [...tolerationsOf(p)] },
    },
    { name: 'an empty list for absent tolerations returns the pod itself', given: { pod: pod(undefined), tolerations: () => [] } },
    { name: 'an empty list for null tolerations returns the pod itself, null kept', given: { pod: pod(null), tolerations: () => [] } },
  ];
  for (const row of unchanged) {
    it(row.name, () => {
      assert.equal(withTolerations(row.given.pod, row.given.tolerations(row.given.pod)), row.given.pod);
    });
  }

  const changed: { name: string; given: { pod: Pod; tolerations: readonly Toleration[] }; want: Toleration[] }[] = [
    { name: 'an equal but different object is a change', given: { pod: pod([a]), tolerations: [{ ...a }] }, want: [a] },
    { name: 'a reordering is a change', given: { pod: pod([a, b]), tolerations: [b, a] }, want: [b, a] },
    { name: 'a removal is a change', given: { pod: pod([a, b]), tolerations: [a] }, want: [a] },
    { name: 'a pod without a spec gets one', given: { pod: { metadata: { name: 'p' } }, tolerations: [a] }, want: [a] },
  ];
  for (const row of changed) {
    it(row.name, () => {
      const got = withTolerations(row.given.pod, row.given.tolerations);
      assert.notEqual(got, row.given.pod);
      assert.deepEqual(got.spec?.tolerations, row.want);
    });
  }
});
