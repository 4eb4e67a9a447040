/**
 * Generated Nodes and Pods for the scheduler and taint-eviction comparisons
 * (scheduler.differential.ts, taint-eviction.differential.ts): fast-check arbitraries sampled from
 * one seed, so a run is a fixed list of objects and a failing run is replayed by its seed.
 *
 * Everything generated is valid for kube-apiserver v1.35 with TaintTolerationComparisonOperators
 * on (the suites create it for real): taint values are label values (no sign, 63 characters at
 * most), a toleration with an empty key is `Exists`, `tolerationSeconds` only with `NoExecute`, Gt/Lt
 * toleration values are canonical int64s, and node-affinity requirements have the value counts
 * their operator needs. What is not valid for the matcher still occurs on purpose: taint values
 * `0550`, `abc`, `9223372036854775808` and the empty value for a Gt/Lt toleration to meet, labels
 * `0550` and `many` for a Gt/Lt requirement.
 */
import fc from 'fast-check';
import type { NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration } from '../../src/api/types.js';

/** The seed of a run: TOLERATOR_DIFFERENTIAL_SEED (to replay one), else the fixed one CI runs. */
export function differentialSeed(): number {
  const raw = process.env.TOLERATOR_DIFFERENTIAL_SEED;
  if (raw === undefined || raw === '') return fixedSeed;
  if (!/^-?[0-9]+$/.test(raw)) throw new Error(`TOLERATOR_DIFFERENTIAL_SEED must be an integer, not ${JSON.stringify(raw)}`);
  return Number(raw);
}

/** The seed CI runs: any fixed integer; this one is the date the suite was written (2026-12-01). */
export const fixedSeed = 20261201;

export const effects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;

/** The label every node may carry whose values a Gt/Lt requirement compares (two of them do not parse). */
export const coresLabel = 'example.com/cores';
/** The taint key whose values a Gt/Lt toleration compares. */
export const generationKey = 'example.com/generation';

const labelValues: Readonly<Record<string, readonly string[]>> = {
  'example.com/zone': ['a', 'b', 'c'],
  // 0550 parses as 550 for a label selector (strconv.ParseInt takes leading zeros); many does not parse.
  [coresLabel]: ['2', '4', '16', '0550', 'many', '9223372036854775807'],
  'example.com/gpu': ['true', 'false'],
  disktype: ['ssd', 'hdd'],
};

const taintValues: Readonly<Record<string, readonly string[]>> = {
  'example.com/dedicated': ['gpu', 'batch'],
  // Gt/Lt compare only canonical int64s (content.IsDecimalInteger, then ParseInt): 0550 is not
  // canonical, abc not a number, 9223372036854775808 one past int64, '' empty; none of these matches.
  [generationKey]: ['5', '10', '950', '0550', 'abc', '9223372036854775807', '9223372036854775808', ''],
  'node.kubernetes.io/not-ready': [''],
  'node.kubernetes.io/unreachable': [''],
  'node.kubernetes.io/memory-pressure': [''],
  'example.com/flaky': ['', 'true'],
};
const taintKeys = Object.keys(taintValues);

/** Toleration values for Gt/Lt: canonical int64s around the taint values above, both ends included. */
const thresholds = ['-1', '0', '5', '9', '10', '100', '949', '951', '9223372036854775806', '9223372036854775807'] as const;

export interface GeneratedNode {
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly unschedulable: boolean;
}

const labelsArbitrary: fc.Arbitrary<Record<string, string>> = fc
  .record(
    Object.fromEntries(
      Object.entries(labelValues).map(([key, values]) => [key, fc.option(fc.constantFrom(...values), { nil: undefined, freq: 2 })]),
    ) as Record<string, fc.Arbitrary<string | undefined>>,
  )
  .map((labels) => Object.fromEntries(Object.entries(labels).filter((entry): entry is [string, string] => entry[1] !== undefined)));

/** `arbitrary` in `percent` of the draws, else undefined. */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: percent, arbitrary }, { weight: 100 - percent, arbitrary: fc.constant(undefined) });
}

const taintArbitrary: fc.Arbitrary<Taint> = fc
  // The numeric key three times as often as each other: Gt/Lt tolerations need taints to meet.
  .oneof({ weight: 3, arbitrary: fc.constant(generationKey) }, { weight: taintKeys.length, arbitrary: fc.constantFrom(...taintKeys) })
  .chain((key) =>
    fc.record({ key: fc.constant(key), value: fc.constantFrom(...(taintValues[key] ?? [''])), effect: fc.constantFrom(...effects) }),
  )
  // The API server omits an empty value (omitempty): the Node's taint is stored without it.
  .map((taint) => (taint.value === '' ? { key: taint.key, effect: taint.effect } : taint));

export const nodeArbitrary: fc.Arbitrary<GeneratedNode> = fc.record({
  labels: labelsArbitrary,
  // A third of the nodes untainted, so pods that tolerate nothing still have somewhere to go; taints
  // are unique by key and effect (the API server refuses a Node with two of the same pair).
  taints: fc.oneof(
    { weight: 1, arbitrary: fc.constant([]) },
    {
      weight: 2,
      arbitrary: fc.uniqueArray(taintArbitrary, { minLength: 1, maxLength: 3, selector: (taint) => `${taint.key}:${taint.effect}` }),
    },
  ),
  // One node in ten cordoned.
  unschedulable: fc.integer({ min: 0, max: 9 }).map((draw) => draw === 0),
});

/** The label of the nodes a Gt/Lt toleration decides (generationPoolNodeArbitrary). */
export const poolLabel = 'example.com/pool';

/**
 * A node of the generation pool: labelled `example.com/pool=generation` and tainted
 * `example.com/generation=VALUE` with NoSchedule or NoExecute, numeric or not, and maybe one more
 * taint. A pod that selects the pool is placed or not by its Gt/Lt tolerations, with the gate on,
 * and by Equal/Exists alone with it off: without such nodes an untainted node elsewhere takes
 * nearly every pod either way, and the gate decides nothing the suite can see.
 */
export const generationPoolNodeArbitrary: fc.Arbitrary<GeneratedNode> = fc
  .record({
    labels: labelsArbitrary,
    value: fc.constantFrom(...(taintValues[generationKey] ?? [])),
    effect: fc.constantFrom('NoSchedule', 'NoExecute'),
    more: sometimes(taintArbitrary, 25),
    unschedulable: fc.constant(false),
  })
  .map(({ labels, value, effect, more, unschedulable }) => {
    const generation: Taint = value === '' ? { key: generationKey, effect } : { key: generationKey, value, effect };
    const taints = more === undefined || (more.key === generationKey && more.effect === effect) ? [generation] : [generation, more];
    return { labels: { ...labels, [poolLabel]: 'generation' }, taints, unschedulable };
  });

const tolerationSecondsArbitrary = fc.option(fc.constantFrom(-5, 0, 3, 60, 300), { nil: undefined, freq: 2 });

/** A toleration the API server accepts, of every shape the matcher distinguishes. */
export const tolerationArbitrary: fc.Arbitrary<Toleration> = fc
  .oneof(
    // Exists, with a key or the empty key that matches every key.
    fc.record({
      key: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...taintKeys) }, { weight: 1, arbitrary: fc.constant('') }),
      operator: fc.constant('Exists'),
      effect: fc.constantFrom('', ...effects),
    }),
    // Equal, spelt out or as the empty operator, with the values nodes carry and one they do not.
    fc.constantFrom(...taintKeys).chain((key) =>
      fc.record({
        key: fc.constant(key),
        operator: fc.constantFrom('Equal', ''),
        value: fc.constantFrom(...(taintValues[key] ?? ['']), 'other'),
        effect: fc.constantFrom('', ...effects),
      }),
    ),
    // Gt/Lt, mostly on the numeric key, sometimes on one whose values are words; twice as often
    // as each other shape, so that the gate decides some pods' fate.
    {
      weight: 2,
      arbitrary: fc.record({
        key: fc.oneof({ weight: 4, arbitrary: fc.constant(generationKey) }, { weight: 1, arbitrary: fc.constant('example.com/dedicated') }),
        operator: fc.constantFrom('Gt', 'Lt'),
        value: fc.constantFrom(...thresholds),
        effect: fc.constantFrom('', ...effects),
      }),
    },
  )
  .chain((toleration) =>
    // tolerationSeconds is valid only with the NoExecute effect.
    toleration.effect === 'NoExecute'
      ? tolerationSecondsArbitrary.map((seconds) => (seconds === undefined ? toleration : { ...toleration, tolerationSeconds: seconds }))
      : fc.constant(toleration),
  )
  .map((toleration) => dropEmpty(toleration));

/** The API server omits empty strings (omitempty): a generated `key: ""` is stored as no key. */
function dropEmpty(toleration: Toleration): Toleration {
  return Object.fromEntries(Object.entries(toleration).filter(([, value]) => value !== ''));
}

/** A node-affinity requirement on labels, each operator with the value count it needs. */
const labelRequirementArbitrary: fc.Arbitrary<NodeSelectorRequirement> = fc.oneof(
  fc.constantFrom(...Object.keys(labelValues)).chain((key) =>
    fc.record({
      key: fc.constant(key),
      operator: fc.constantFrom('In', 'NotIn'),
      values: fc.uniqueArray(fc.constantFrom(...(labelValues[key] ?? [])), { minLength: 1, maxLength: 2 }),
    }),
  ),
  fc.record({ key: fc.constantFrom(...Object.keys(labelValues)), operator: fc.constantFrom('Exists', 'DoesNotExist') }),
  fc.record({
    key: fc.oneof({ weight: 4, arbitrary: fc.constant(coresLabel) }, { weight: 1, arbitrary: fc.constant('example.com/zone') }),
    operator: fc.constantFrom('Gt', 'Lt'),
    values: fc.constantFrom('1', '3', '4', '15', '549', '550', '551').map((value) => [value]),
  }),
);

/** A term: some label requirements, and sometimes a `metadata.name` field requirement (In or NotIn, one value). */
function termArbitrary(nodeNames: readonly string[]): fc.Arbitrary<NodeSelectorTerm> {
  return fc
    .record({
      matchExpressions: fc.array(labelRequirementArbitrary, { minLength: 0, maxLength: 2 }),
      matchFields: sometimes(
        fc.record({
          key: fc.constant('metadata.name'),
          operator: fc.constantFrom('In', 'NotIn'),
          values: fc.constantFrom(...nodeNames).map((name) => [name]),
        }),
        30,
      ),
    })
    .map(({ matchExpressions, matchFields }) => ({
      ...(matchExpressions.length === 0 && matchFields !== undefined ? {} : { matchExpressions }),
      ...(matchFields === undefined ? {} : { matchFields: [matchFields] }),
    }));
  // A term of no requirement at all ({matchExpressions: []}) occurs too: valid, and it matches no node.
}

export interface GeneratedPlacement {
  readonly tolerations: readonly Toleration[];
  readonly nodeSelector?: Readonly<Record<string, string>>;
  readonly terms?: readonly NodeSelectorTerm[];
}

/** What a pod asks of its node: tolerations, a nodeSelector, required node affinity. */
export function placementArbitrary(nodeNames: readonly string[]): fc.Arbitrary<GeneratedPlacement> {
  return fc
    .record({
      tolerations: fc.array(tolerationArbitrary, { maxLength: 4 }),
      nodeSelector: sometimes(
        fc.uniqueArray(
          fc
            .constantFrom(...Object.keys(labelValues))
            .chain((key) => fc.tuple(fc.constant(key), fc.constantFrom(...(labelValues[key] ?? [])))),
          { minLength: 1, maxLength: 2, selector: ([key]) => key },
        ),
        25,
      ),
      terms: sometimes(fc.array(termArbitrary(nodeNames), { minLength: 1, maxLength: 2 }), 35),
      pool: fc.integer({ min: 0, max: 99 }).map((draw) => draw < 35),
    })
    .map(({ tolerations, nodeSelector, terms, pool }) => ({
      tolerations,
      ...(nodeSelector === undefined && !pool
        ? {}
        : { nodeSelector: { ...Object.fromEntries(nodeSelector ?? []), ...(pool ? { [poolLabel]: 'generation' } : {}) } }),
      ...(terms === undefined ? {} : { terms }),
    }));
}

/** The pod spec fields of a placement. */
export function placementSpec(placement: GeneratedPlacement): Record<string, unknown> {
  return {
    ...(placement.tolerations.length === 0 ? {} : { tolerations: placement.tolerations }),
    ...(placement.nodeSelector === undefined ? {} : { nodeSelector: placement.nodeSelector }),
    ...(placement.terms === undefined
      ? {}
      : { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: placement.terms } } } }),
  };
}

/** `count` samples of `arbitrary` from `seed`: the same list every time for the same seed. */
export function sampled<T>(arbitrary: fc.Arbitrary<T>, count: number, seed: number): T[] {
  return fc.sample(arbitrary, { seed, numRuns: count });
}
