import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Toleration } from '../../src/api/types.js';
import { isSuperset, mergeIndexed, mergeTolerations, verifyAgainstWhitelist, verifyIndexed } from '../../src/tolerations/merge.js';

/** The named tolerations of upstream pkg/util/tolerations/tolerations_test.go. */
const named = {
  all: { operator: 'Exists' },
  'all-nosched': { operator: 'Exists', effect: 'NoSchedule' },
  'all-noexec': { operator: 'Exists', effect: 'NoExecute' },
  foo: { key: 'foo', operator: 'Exists' },
  'foo-bar': { key: 'foo', operator: 'Equal', value: 'bar' },
  'foo-nosched': { key: 'foo', operator: 'Exists', effect: 'NoSchedule' },
  'foo-bar-nosched': { key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoSchedule' },
  'foo-baz-nosched': { key: 'foo', operator: 'Equal', value: 'baz', effect: 'NoSchedule' },
  'faz-nosched': { key: 'faz', operator: 'Exists', effect: 'NoSchedule' },
  'faz-baz-nosched': { key: 'faz', operator: 'Equal', value: 'baz', effect: 'NoSchedule' },
  'foo-prefnosched': { key: 'foo', operator: 'Exists', effect: 'PreferNoSchedule' },
  'foo-noexec': { key: 'foo', operator: 'Exists', effect: 'NoExecute' },
  'foo-bar-noexec': { key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoExecute' },
  'foo-noexec-10': { key: 'foo', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 10 },
  'foo-noexec-0': { key: 'foo', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 0 },
  'foo-bar-noexec-10': { key: 'foo', operator: 'Equal', value: 'bar', effect: 'NoExecute', tolerationSeconds: 10 },
} satisfies Record<string, Toleration>;
type Name = keyof typeof named;
const names = Object.keys(named) as Name[];

/** Fresh copies, so identity assertions and mutation checks cannot pass by accident. */
function tolerations(list: readonly Name[]): Toleration[] {
  return list.map((name) => ({ ...named[name] }));
}

describe('isSuperset: the upstream TestIsSuperset table over every pair of named tolerations', () => {
  const rows: { name: string; given: Name; want: Name[] }[] = [
    {
      name: 'the tolerate-everything toleration covers every other',
      given: 'all',
      want: names.filter((n) => n !== 'all'),
    },
    {
      name: 'an empty-key Exists NoSchedule covers every NoSchedule toleration',
      given: 'all-nosched',
      want: ['foo-nosched', 'foo-bar-nosched', 'foo-baz-nosched', 'faz-nosched', 'faz-baz-nosched'],
    },
    {
      name: 'an empty-key Exists NoExecute covers every NoExecute toleration, bounded or not',
      given: 'all-noexec',
      want: ['foo-noexec', 'foo-bar-noexec', 'foo-noexec-10', 'foo-noexec-0', 'foo-bar-noexec-10'],
    },
    {
      name: 'a key with Exists and no effect covers every toleration of that key',
      given: 'foo',
      want: [
        'foo-bar',
        'foo-nosched',
        'foo-bar-nosched',
        'foo-baz-nosched',
        'foo-prefnosched',
        'foo-noexec',
        'foo-bar-noexec',
        'foo-noexec-10',
        'foo-noexec-0',
        'foo-bar-noexec-10',
      ],
    },
    {
      name: 'an Equal with no effect covers that value under every effect',
      given: 'foo-bar',
      want: ['foo-bar-nosched', 'foo-bar-noexec', 'foo-bar-noexec-10'],
    },
    {
      name: 'a key with Exists NoSchedule covers that key’s NoSchedule values',
      given: 'foo-nosched',
      want: ['foo-bar-nosched', 'foo-baz-nosched'],
    },
    { name: 'an Equal NoSchedule covers only itself', given: 'foo-bar-nosched', want: [] },
    { name: 'another key with Exists NoSchedule covers its own value', given: 'faz-nosched', want: ['faz-baz-nosched'] },
    { name: 'another Equal NoSchedule covers only itself', given: 'faz-baz-nosched', want: [] },
    { name: 'a PreferNoSchedule Exists covers only itself', given: 'foo-prefnosched', want: [] },
    {
      name: 'an unbounded NoExecute Exists covers every NoExecute toleration of the key',
      given: 'foo-noexec',
      want: ['foo-bar-noexec', 'foo-noexec-10', 'foo-noexec-0', 'foo-bar-noexec-10'],
    },
    { name: 'an unbounded NoExecute Equal covers its bounded twin', given: 'foo-bar-noexec', want: ['foo-bar-noexec-10'] },
    { name: 'a 10 s NoExecute Exists covers shorter or equal bounds', given: 'foo-noexec-10', want: ['foo-noexec-0', 'foo-bar-noexec-10'] },
    { name: 'a 0 s NoExecute Exists covers only itself', given: 'foo-noexec-0', want: [] },
    { name: 'a 10 s NoExecute Equal covers only itself', given: 'foo-bar-noexec-10', want: [] },
  ];
  for (const row of rows) {
    for (const other of names) {
      const want = other === row.given || row.want.includes(other);
      it(`${row.name}: ${row.given} ${want ? 'covers' : 'does not cover'} ${other}`, () => {
        assert.equal(isSuperset({ ...named[row.given] }, { ...named[other] }), want);
      });
    }
  }

  // Upstream's table names "foo-prenosched", a typo that is not in its map, so it tests the zero Toleration.
  for (const other of names) {
    it(`the zero toleration (empty key and operator, Equal semantics) does not cover ${other}`, () => {
      assert.equal(isSuperset({}, { ...named[other] }), false);
    });
  }
});

describe('isSuperset: rules of docs/kubernetes-rules.md#toleration-merge-and-whitelist', () => {
  const rows: { name: string; given: { ss: Toleration; t: Toleration }; want: boolean }[] = [
    {
      name: 'an Equal toleration does not cover an identical one whose operator was left empty',
      given: { ss: { key: 'k', operator: 'Equal', value: 'v' }, t: { key: 'k', value: 'v' } },
      want: false,
    },
    {
      name: 'an empty-operator toleration covers the Equal one with the same key and value',
      given: { ss: { key: 'k', value: 'v' }, t: { key: 'k', operator: 'Equal', value: 'v' } },
      want: true,
    },
    {
      name: 'an absent operator and an empty operator are the same toleration',
      given: { ss: { key: 'k', value: 'v' }, t: { key: 'k', operator: '', value: 'v' } },
      want: true,
    },
    {
      name: 'a bounded NoExecute does not cover an unbounded one',
      given: {
        ss: { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        t: { key: 'k', operator: 'Exists', effect: 'NoExecute' },
      },
      want: false,
    },
    {
      name: 'a bounded NoExecute does not cover a longer bound',
      given: {
        ss: { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        t: { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 600 },
      },
      want: false,
    },
    {
      name: 'bounds compare as raw values, so 0 covers -5',
      given: {
        ss: { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 0 },
        t: { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: -5 },
      },
      want: true,
    },
    {
      name: 'an empty-effect toleration bounds nothing, even with tolerationSeconds',
      given: { ss: { key: 'k', operator: 'Exists', tolerationSeconds: 5 }, t: { key: 'k', operator: 'Exists', effect: 'NoExecute' } },
      want: true,
    },
    {
      name: 'a null tolerationSeconds is nil, the same as absent',
      given: {
        ss: { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: null },
        t: { key: 'k', operator: 'Exists', effect: 'NoExecute' },
      },
      want: true,
    },
    {
      name: 'a Gt toleration covers its exact duplicate',
      given: { ss: { key: 'k', operator: 'Gt', value: '5' }, t: { key: 'k', operator: 'Gt', value: '5' } },
      want: true,
    },
    {
      name: 'a Gt toleration does not cover a stricter Gt: there is no numeric subsumption',
      given: { ss: { key: 'k', operator: 'Gt', value: '5' }, t: { key: 'k', operator: 'Gt', value: '10' } },
      want: false,
    },
    {
      name: 'an Lt toleration does not cover a stricter Lt',
      given: { ss: { key: 'k', operator: 'Lt', value: '10' }, t: { key: 'k', operator: 'Lt', value: '5' } },
      want: false,
    },
    {
      name: 'an Exists covers a Gt of the same key',
      given: { ss: { key: 'k', operator: 'Exists' }, t: { key: 'k', operator: 'Gt', value: '5' } },
      want: true,
    },
    {
      name: 'an empty key covers other keys only with Exists',
      given: { ss: { operator: 'Exists', effect: 'NoSchedule' }, t: { key: 'k', operator: 'Exists', effect: 'NoSchedule' } },
      want: true,
    },
    {
      name: 'an empty key with Equal does not cover other keys',
      given: { ss: { operator: 'Equal', value: 'v' }, t: { key: 'k', operator: 'Equal', value: 'v' } },
      want: false,
    },
    {
      name: 'an absent key equals an empty key for identity',
      given: { ss: { key: '', operator: 'Exists' }, t: { operator: 'Exists' } },
      want: true,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(isSuperset(row.given.ss, row.given.t), row.want);
    });
  }
});

describe('verifyAgainstWhitelist: the upstream TestVerifyAgainstWhitelist table', () => {
  const rows: { name: string; given: { input: Name[]; whitelist: Name[] }; want: boolean }[] = [
    {
      name: 'equal input and whitelist are accepted',
      given: { input: ['foo-bar-nosched', 'foo-baz-nosched'], whitelist: ['foo-bar-nosched', 'foo-baz-nosched'] },
      want: true,
    },
    {
      name: 'a duplicated whitelisted input is accepted',
      given: { input: ['foo-bar-nosched', 'foo-bar-nosched'], whitelist: ['foo-bar-nosched', 'foo-baz-nosched'] },
      want: true,
    },
    {
      name: 'a tolerate-everything whitelist accepts all',
      given: { input: ['foo-bar-nosched', 'foo-bar-nosched'], whitelist: ['all'] },
      want: true,
    },
    {
      name: 'a duplicated input not in the whitelist is rejected',
      given: { input: ['foo-bar-nosched', 'foo-bar-nosched'], whitelist: ['foo-baz-nosched'] },
      want: false,
    },
    {
      name: 'a value mismatch is rejected',
      given: { input: ['foo-bar-nosched', 'foo-baz-nosched'], whitelist: ['foo-baz-nosched'] },
      want: false,
    },
    {
      name: 'an input absent from the whitelist is rejected',
      given: { input: ['foo-bar-nosched'], whitelist: ['foo-baz-nosched'] },
      want: false,
    },
    { name: 'disjoint sets are rejected', given: { input: ['foo-bar'], whitelist: ['foo-nosched'] }, want: false },
    { name: 'an empty whitelist accepts anything', given: { input: ['foo-bar'], whitelist: [] }, want: true },
    { name: 'an empty input is accepted', given: { input: [], whitelist: ['foo-bar'] }, want: true },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(verifyAgainstWhitelist(tolerations(row.given.input), tolerations(row.given.whitelist)), row.want);
    });
  }
});

describe('verifyAgainstWhitelist: rules of docs/kubernetes-rules.md#toleration-merge-and-whitelist', () => {
  const rows: { name: string; given: { input: Toleration[]; whitelist: Toleration[] }; want: boolean }[] = [
    {
      name: 'an Equal whitelist entry does not cover a toleration whose operator was left empty',
      given: { input: [{ key: 'k', value: 'v' }], whitelist: [{ key: 'k', operator: 'Equal', value: 'v' }] },
      want: false,
    },
    {
      name: 'a 300 s NoExecute entry does not cover 600 s',
      given: {
        input: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 600 }],
        whitelist: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
      },
      want: false,
    },
    {
      name: 'a 300 s NoExecute entry does not cover forever',
      given: {
        input: [{ key: 'k', operator: 'Exists', effect: 'NoExecute' }],
        whitelist: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
      },
      want: false,
    },
    {
      name: 'a 300 s NoExecute entry covers 300 s',
      given: {
        input: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
        whitelist: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
      },
      want: true,
    },
    {
      name: 'a Gt entry covers only an identical Gt toleration',
      given: { input: [{ key: 'sla', operator: 'Gt', value: '900' }], whitelist: [{ key: 'sla', operator: 'Gt', value: '800' }] },
      want: false,
    },
    {
      name: 'a Gt entry covers an identical Gt toleration',
      given: { input: [{ key: 'sla', operator: 'Gt', value: '800' }], whitelist: [{ key: 'sla', operator: 'Gt', value: '800' }] },
      want: true,
    },
    {
      name: 'every toleration must be covered, not just one',
      given: {
        input: [
          { key: 'a', operator: 'Exists' },
          { key: 'b', operator: 'Exists' },
        ],
        whitelist: [{ key: 'a', operator: 'Exists' }],
      },
      want: false,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(verifyAgainstWhitelist(row.given.input, row.given.whitelist), row.want);
    });
  }
});

describe('mergeTolerations: the upstream TestMergeTolerations table', () => {
  const rows: { name: string; given: { first: Name[]; second: Name[] }; want: Name[] }[] = [
    {
      name: 'disjoint lists are concatenated',
      given: { first: ['foo-bar-nosched', 'faz-baz-nosched', 'foo-noexec-10'], second: ['foo-prefnosched', 'foo-baz-nosched'] },
      want: ['foo-bar-nosched', 'faz-baz-nosched', 'foo-noexec-10', 'foo-prefnosched', 'foo-baz-nosched'],
    },
    {
      name: 'duplicates keep one copy',
      given: {
        first: ['foo-bar-nosched', 'faz-baz-nosched', 'foo-noexec-10'],
        second: ['foo-bar-nosched', 'faz-baz-nosched', 'foo-noexec-10'],
      },
      want: ['foo-bar-nosched', 'faz-baz-nosched', 'foo-noexec-10'],
    },
    {
      name: 'redundant subsets are merged into their superset',
      given: { first: ['foo-bar-nosched', 'foo-baz-nosched'], second: ['foo-nosched', 'faz-baz-nosched'] },
      want: ['foo-nosched', 'faz-baz-nosched'],
    },
    {
      name: 'everything merges into a later tolerate-everything',
      given: { first: ['foo-bar-nosched', 'foo-baz-nosched', 'foo-noexec-10'], second: ['all'] },
      want: ['all'],
    },
    {
      name: 'everything merges into an earlier tolerate-everything',
      given: { first: ['all'], second: ['foo-bar-nosched', 'foo-baz-nosched', 'foo-noexec-10'] },
      want: ['all'],
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(mergeTolerations(tolerations(row.given.first), tolerations(row.given.second)), tolerations(row.want));
    });
  }
});

describe('mergeTolerations: worked results of docs/kubernetes-rules.md#toleration-merge-and-whitelist (pod first, namespace second)', () => {
  const noExecute = (tolerationSeconds?: number): Toleration =>
    tolerationSeconds === undefined
      ? { key: 'k', operator: 'Exists', effect: 'NoExecute' }
      : { key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds };
  const rows: { name: string; given: { pod: Toleration[]; ns: Toleration[] }; want: 'pod' | 'ns' | 'both' }[] = [
    {
      name: 'pod 600 s against namespace 300 s keeps the pod’s longer bound',
      given: { pod: [noExecute(600)], ns: [noExecute(300)] },
      want: 'pod',
    },
    {
      name: 'pod 100 s against namespace 300 s keeps the namespace’s longer bound',
      given: { pod: [noExecute(100)], ns: [noExecute(300)] },
      want: 'ns',
    },
    { name: 'pod forever against namespace 300 s keeps forever', given: { pod: [noExecute()], ns: [noExecute(300)] }, want: 'pod' },
    {
      name: 'pod -5 s against namespace 0 s keeps 0, comparing raw values',
      given: { pod: [noExecute(-5)], ns: [noExecute(0)] },
      want: 'ns',
    },
    {
      name: 'pod empty operator against namespace Equal keeps the pod’s empty operator',
      given: {
        pod: [{ key: 'k', value: 'v', effect: 'NoSchedule' }],
        ns: [{ key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' }],
      },
      want: 'pod',
    },
    {
      name: 'pod Equal against namespace empty operator keeps the namespace’s empty operator',
      given: {
        pod: [{ key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' }],
        ns: [{ key: 'k', operator: '', value: 'v', effect: 'NoSchedule' }],
      },
      want: 'ns',
    },
    {
      name: 'a pod Gt and a namespace Gt with different thresholds are both kept',
      given: { pod: [{ key: 'sla', operator: 'Gt', value: '900' }], ns: [{ key: 'sla', operator: 'Gt', value: '800' }] },
      want: 'both',
    },
    {
      name: 'identical pod and namespace Gt tolerations merge into the pod’s',
      given: { pod: [{ key: 'sla', operator: 'Gt', value: '800' }], ns: [{ key: 'sla', operator: 'Gt', value: '800' }] },
      want: 'pod',
    },
    {
      name: 'same key and effect with different values are both kept (no conflict check)',
      given: {
        pod: [{ key: 'k', operator: 'Equal', value: 'a', effect: 'NoSchedule' }],
        ns: [{ key: 'k', operator: 'Equal', value: 'b', effect: 'NoSchedule' }],
      },
      want: 'both',
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const { pod, ns } = row.given;
      const want = row.want === 'pod' ? pod : row.want === 'ns' ? ns : [...pod, ...ns];
      const got = mergeTolerations(pod, ns);
      assert.equal(got.length, want.length);
      got.forEach((toleration, i) => {
        assert.equal(toleration, want[i], `element ${i} must be the given object itself`);
      });
    });
  }
});

describe('mergeTolerations: order, identity and immutability', () => {
  it('drops a subset even when both came from the same list', () => {
    const subset: Toleration = { key: 'k', operator: 'Equal', value: 'v', effect: 'NoSchedule' };
    const superset: Toleration = { key: 'k', operator: 'Exists' };
    assert.deepEqual(mergeTolerations([subset, superset], []), [superset]);
  });

  it('places the survivor where the later superset sits', () => {
    const a: Toleration = { key: 'a', operator: 'Equal', value: 'v' };
    const b: Toleration = { key: 'b', operator: 'Exists' };
    const aAll: Toleration = { key: 'a', operator: 'Exists' };
    const got = mergeTolerations([a, b], [aAll]);
    assert.equal(got[0], b);
    assert.equal(got[1], aAll);
    assert.equal(got.length, 2);
  });

  it('keeps the first of two identical tolerations and its object identity', () => {
    const first: Toleration = { key: 'k', operator: 'Exists' };
    const second: Toleration = { key: 'k', operator: 'Exists', value: '' };
    const got = mergeTolerations([first], [second]);
    assert.equal(got.length, 1);
    assert.equal(got[0], first);
  });

  it('keeps absent fields absent: no empty strings are added', () => {
    const given: Toleration = { key: 'k', operator: 'Exists' };
    const got = mergeTolerations([given], [{ key: 'other', operator: 'Exists' }]);
    assert.deepEqual(Object.keys(got[0]!), ['key', 'operator']);
  });

  it('does not modify either input list or their elements', () => {
    const first = tolerations(['foo-bar-nosched', 'foo-baz-nosched']);
    const second = tolerations(['foo-nosched']);
    const firstBefore = structuredClone(first);
    const secondBefore = structuredClone(second);
    const got = mergeTolerations(first, second);
    assert.deepEqual(first, firstBefore);
    assert.deepEqual(second, secondBefore);
    assert.notEqual(got, first);
    assert.notEqual(got, second);
  });

  it('returns an empty list for two empty lists', () => {
    assert.deepEqual(mergeTolerations([], []), []);
  });
});

describe('upstream TestFuzzed, as properties', () => {
  // The generator of upstream's fuzz test: a small key/value space to encourage collisions, valid tolerations only.
  const effect = fc.constantFrom('', 'NoExecute', 'NoSchedule', 'PreferNoSchedule');
  const toleration: fc.Arbitrary<Toleration> = fc.oneof(
    { weight: 1, arbitrary: fc.constant<Toleration>({ operator: 'Exists' }) },
    {
      weight: 99,
      arbitrary: fc
        .record({
          effect,
          key: fc.integer({ min: 1, max: 6 }).map((n) => 'a'.repeat(n)),
          exists: fc.boolean(),
          value: fc.integer({ min: 1, max: 6 }).map((n) => 'b'.repeat(n)),
          seconds: fc.option(fc.integer({ min: 0, max: 9 }), { nil: undefined }),
        })
        .map(({ effect: e, key, exists, value, seconds }) => {
          const t: Toleration = exists ? { key, operator: 'Exists', effect: e } : { key, operator: 'Equal', value, effect: e };
          return e === 'NoExecute' && seconds !== undefined ? { ...t, tolerationSeconds: seconds } : t;
        }),
    },
  );
  const list = fc.array(toleration, { maxLength: 10 });
  const isContained = (t: Toleration, set: readonly Toleration[]): boolean => set.some((ss) => isSuperset(ss, t));
  const params = { seed: 1234, numRuns: 1000 };

  it('verifyAgainstWhitelist accepts exactly when every toleration is contained in the whitelist', () => {
    fc.assert(
      fc.property(list, fc.array(toleration, { minLength: 1, maxLength: 11 }), (input, whitelist) => {
        assert.equal(
          verifyAgainstWhitelist(input, whitelist),
          input.every((t) => isContained(t, whitelist)),
        );
      }),
      params,
    );
  });

  it('mergeTolerations keeps a superset of every input toleration', () => {
    fc.assert(
      fc.property(list, list, (a, b) => {
        const merged = mergeTolerations(a, b);
        for (const t of [...a, ...b]) {
          assert.ok(isContained(t, merged));
        }
      }),
      params,
    );
  });
});

/**
 * Upstream's MergeTolerations and VerifyAgainstWhitelist exactly as written, comparing every pair:
 * the reference the indexed versions must agree with.
 */
function referenceMerge(first: readonly Toleration[], second: readonly Toleration[]): Toleration[] {
  const all = [...first, ...second];
  const deepEqual = (a: Toleration, b: Toleration): boolean =>
    (a.key ?? '') === (b.key ?? '') &&
    (a.operator ?? '') === (b.operator ?? '') &&
    (a.value ?? '') === (b.value ?? '') &&
    (a.effect ?? '') === (b.effect ?? '') &&
    (a.tolerationSeconds ?? undefined) === (b.tolerationSeconds ?? undefined);
  const merged: Toleration[] = [];
  all.forEach((t, i) => {
    if (merged.some((kept) => isSuperset(kept, t))) {
      return;
    }
    if (all.slice(i + 1).some((later) => !deepEqual(t, later) && isSuperset(later, t))) {
      return;
    }
    merged.push(t);
  });
  return merged;
}

function referenceVerify(tolerations: readonly Toleration[], whitelist: readonly Toleration[]): boolean {
  return whitelist.length === 0 || tolerations.length === 0 || tolerations.every((t) => whitelist.some((w) => isSuperset(w, t)));
}

describe('mergeTolerations and verifyAgainstWhitelist agree with upstream’s pairwise algorithm', () => {
  // Few keys, values and seconds so that equal, covering and identical tolerations are common;
  // every operator spelling (bogus ones too), absent and empty fields, null and negative seconds,
  // values on Exists, seconds on effects other than NoExecute: what a hostile pod may carry.
  const absentOr = <T>(values: readonly T[]): fc.Arbitrary<T | undefined> => fc.constantFrom<T | undefined>(undefined, ...values);
  const toleration: fc.Arbitrary<Toleration> = fc
    .record({
      key: absentOr(['', 'a', 'b']),
      operator: absentOr(['', 'Equal', 'Exists', 'Gt', 'Lt', 'exists', 'bogus']),
      value: absentOr(['', 'x', 'y']),
      effect: absentOr(['', 'NoExecute', 'NoSchedule', 'PreferNoSchedule']),
      tolerationSeconds: fc.constantFrom<number | null | undefined>(undefined, null, -5, 0, 3, 3, 7),
    })
    .map((fields) => {
      const t: Toleration = {};
      for (const [name, value] of Object.entries(fields)) {
        if (value !== undefined) Object.assign(t, { [name]: value });
      }
      return t;
    });
  const list = fc.array(toleration, { maxLength: 14 });
  const params = { seed: 5471, numRuns: 5000 };

  // mergeTolerations compares pairs for a short list and indexes a long one: both are checked
  // here on the same lists, the indexed one through its own export.
  for (const [name, merge] of [
    ['mergeTolerations', mergeTolerations],
    ['the indexed merge', (first: readonly Toleration[], second: readonly Toleration[]) => mergeIndexed([...first, ...second])],
  ] as const) {
    it(`${name} keeps the same objects, in the same order`, () => {
      fc.assert(
        fc.property(list, list, (first, second) => {
          const got = merge(first, second);
          const want = referenceMerge(first, second);
          assert.equal(got.length, want.length, `kept ${JSON.stringify(got)}, upstream keeps ${JSON.stringify(want)}`);
          got.forEach((t, i) => {
            assert.equal(t, want[i], `element ${i}: ${JSON.stringify(t)} where upstream keeps ${JSON.stringify(want[i])}`);
          });
        }),
        params,
      );
    });
  }

  it('mergeTolerations of a list longer than the pairwise bound keeps what upstream keeps', () => {
    fc.assert(
      fc.property(fc.array(toleration, { minLength: 33, maxLength: 60 }), list, (first, second) => {
        assert.deepEqual(mergeTolerations(first, second), referenceMerge(first, second));
      }),
      { seed: 5471, numRuns: 500 },
    );
  });

  it('mergeTolerations agrees when one toleration is repeated as the same object', () => {
    fc.assert(
      fc.property(toleration, list, fc.array(fc.nat(20), { maxLength: 6 }), (repeated, list, positions) => {
        const first = [...list];
        for (const position of positions) first.splice(position % (first.length + 1), 0, repeated);
        assert.deepEqual(mergeTolerations(first, [repeated]), referenceMerge(first, [repeated]));
        assert.deepEqual(mergeIndexed([...first, repeated]), referenceMerge(first, [repeated]));
      }),
      params,
    );
  });

  it('verifyAgainstWhitelist gives upstream’s answer', () => {
    fc.assert(
      fc.property(list, list, (tolerations, whitelist) => {
        assert.equal(verifyAgainstWhitelist(tolerations, whitelist), referenceVerify(tolerations, whitelist));
        assert.equal(verifyIndexed(tolerations, whitelist), referenceVerify(tolerations, whitelist));
      }),
      params,
    );
  });
});

describe('mergeTolerations and verifyAgainstWhitelist cost O(n log n) where upstream compares every pair', () => {
  // The criterion: at 8,000 the indexed version must cost less than the pairwise reference at
  // 4,000. Quadratic work at twice the size costs four times as much, so an implementation as
  // quadratic as the reference fails by ×4; the indexed versions pass by about ×10. A plain growth
  // ratio would be noisier: linear work on hash maps of tens of thousands of entries measures ×5 to
  // ×9 for 4× the entries on a busy machine, as the maps outgrow the CPU caches
  // (test/properties/review-cost.slow.test.ts checks growth over whole reviews).

  /** The least CPU time, in microseconds, of `runs` runs of `work`, after one more to compile it. */
  function leastCpuMicros(work: () => unknown, runs: number): number {
    work();
    let least = Infinity;
    for (let i = 0; i < runs; i++) {
      const started = process.cpuUsage();
      work();
      const used = process.cpuUsage(started);
      least = Math.min(least, used.user + used.system);
    }
    return least;
  }

  function milliseconds(micros: number): string {
    return `${(micros / 1000).toFixed(1)} ms`;
  }

  it('merges 8,000 tolerations of one key in less time than the pairwise merge takes for 4,000', () => {
    // Distinct values (no value covers another), each repeated once, every effect, and a NoExecute
    // bound on some: one key's bucket holds them all. Upstream's loop took 12 s for 20,000 here.
    const effects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute', ''];
    const tolerations = (n: number): Toleration[] =>
      Array.from({ length: n }, (_, i): Toleration => ({
        key: 'k',
        operator: 'Equal',
        value: `v${i % (n / 2)}`,
        effect: effects[i % 4],
        ...(i % 4 === 2 ? { tolerationSeconds: i % 97 } : {}),
      }));
    const extra: Toleration[] = [{ key: 'k', operator: 'Exists', effect: 'NoSchedule' }];
    const small = tolerations(4_000);
    const large = tolerations(8_000);
    const indexed = leastCpuMicros(() => mergeTolerations(large, extra), 3);
    const pairwise = leastCpuMicros(() => referenceMerge(small, extra), 1);
    assert.ok(
      indexed < pairwise,
      `the merge of 8,000 took ${milliseconds(indexed)}, the pairwise merge of 4,000 ${milliseconds(pairwise)}`,
    );
  });

  it('checks 8,000 tolerations against 8,000 whitelist entries in less time than the pairwise check takes for 4,000', () => {
    // Every toleration is covered only by the last whitelist entry of its key: a pairwise check
    // looks through the whole whitelist for each.
    const lists = (n: number): { tolerations: Toleration[]; whitelist: Toleration[] } => ({
      tolerations: Array.from({ length: n }, (_, i): Toleration => ({
        key: `k${i % 50}`,
        operator: 'Equal',
        value: `v${i}`,
        effect: 'NoExecute',
        tolerationSeconds: i,
      })),
      whitelist: Array.from({ length: n }, (_, i): Toleration =>
        i >= n - 50
          ? { key: `k${i % 50}`, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: n }
          : { key: `k${i % 50}`, operator: 'Equal', value: `w${i}` },
      ),
    });
    const small = lists(4_000);
    const large = lists(8_000);
    assert.equal(verifyAgainstWhitelist(large.tolerations, large.whitelist), true);
    const indexed = leastCpuMicros(() => verifyAgainstWhitelist(large.tolerations, large.whitelist), 3);
    const pairwise = leastCpuMicros(() => referenceVerify(small.tolerations, small.whitelist), 1);
    assert.ok(
      indexed < pairwise,
      `the check of 8,000 took ${milliseconds(indexed)}, the pairwise check of 4,000 ${milliseconds(pairwise)}`,
    );
  });
});
