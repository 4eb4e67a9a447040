/**
 * The compiled forms SchedulingWarnings uses (src/scheduling/compiled-placement.ts,
 * compiled-node-affinity.ts, toleration-index.ts) against the plain transcriptions of upstream
 * they replace on that path (evaluatePlacement, matchRequiredNodeAffinity, toleratesTaint), on
 * generated pods and nodes: the same decisions always, the same first reason whenever nothing
 * is long enough to be clipped. And schedulingWarnings against the version before the compiled
 * forms (kept below as the oracle), on inputs small enough that the two must say the same.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint, Toleration } from '../../src/api/types.js';
import { compileNodeAffinity } from '../../src/scheduling/compiled-node-affinity.js';
import { compilePlacement } from '../../src/scheduling/compiled-placement.js';
import { evaluatePlacement } from '../../src/scheduling/placement.js';
import { matchRequiredNodeAffinity } from '../../src/scheduling/reference-node-affinity.js';
import { schedulingWarnings } from '../../src/scheduling/scheduling-warnings.js';
import { canonicalInt64, indexTolerations } from '../../src/scheduling/toleration-index.js';
import { maxReasonChars } from '../../src/scheduling/warning-text.js';
import { WorkBudget } from '../../src/scheduling/work-budget.js';
import { toleratesTaint, type ComparisonOperatorGate } from '../../src/tolerations/matching.js';
import { parseCanonicalInt64 } from '../../src/tolerations/numeric.js';
import { tolerationArbitrary } from '../support/pod-arbitraries.js';

const options = { numRuns: 600, seed: 0x5c4ed };
const unlimited = (): WorkBudget => new WorkBudget(Number.MAX_SAFE_INTEGER);

// A small universe, so that labels, requirements and taints meet often.
const labelKeys = ['zone', 'gen', 'rack'] as const;
const labelValues = ['a', '5', '950', '-3', '007', '+4', 'x y', '9223372036854775808', ''] as const;
const nodeNames = ['n1', 'n2', 'n3'] as const;
const taintKeys = ['dedicated', 'example.com/gpu', 'node.kubernetes.io/unschedulable', ''] as const;
const taintValues = ['', 'gpu', '5', '-3', '0550', '900'] as const;
const taintEffects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute', 'Bogus'] as const;

/**
 * Tolerations of the taints above, often on the same key, value and threshold, so that boundaries
 * (a threshold equal to the taint's value, tolerationSeconds 0) and first-match order come up.
 */
const nearTolerationArbitrary: fc.Arbitrary<Toleration> = fc
  .record({
    key: fc.constantFrom('dedicated', 'example.com/gpu', ''),
    operator: fc.constantFrom('Equal', 'Exists', 'Gt', 'Lt', ''),
    value: fc.constantFrom('gpu', '5', '-3', '900', ''),
    effect: fc.constantFrom('NoSchedule', 'NoExecute', ''),
    tolerationSeconds: fc.constantFrom(-1, 0, 1, 300, null, undefined),
  })
  .map(({ tolerationSeconds, ...rest }) => (tolerationSeconds === undefined ? rest : { ...rest, tolerationSeconds }));
const anyTolerationArbitrary = fc.oneof(tolerationArbitrary, nearTolerationArbitrary);

const requirementArbitrary: fc.Arbitrary<NodeSelectorRequirement> = fc
  .record({
    key: fc.constantFrom(...labelKeys, 'bad key!', ''),
    operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'in'),
    values: fc.option(fc.array(fc.constantFrom(...labelValues, 'not valid!'), { maxLength: 3 }), { nil: undefined }),
  })
  .map(({ key, operator, values }) => (values === undefined ? { key, operator } : { key, operator, values }));

const fieldArbitrary: fc.Arbitrary<NodeSelectorRequirement> = fc.record({
  key: fc.constantFrom('metadata.name', 'spec.unschedulable'),
  operator: fc.constantFrom('In', 'NotIn', 'Exists'),
  values: fc.array(fc.constantFrom(...nodeNames, ''), { minLength: 0, maxLength: 2 }),
});

/** Terms that parse (or are empty): matching, not parsing, is what most of the tests are about. */
const validTermArbitrary: fc.Arbitrary<NodeSelectorTerm> = fc.record(
  {
    matchExpressions: fc.array(
      fc.oneof(
        fc.record({
          key: fc.constantFrom(...labelKeys),
          operator: fc.constantFrom('In', 'NotIn'),
          values: fc.array(fc.constantFrom('a', '5', '950', ''), { minLength: 1, maxLength: 3 }),
        }),
        fc.record({ key: fc.constantFrom(...labelKeys), operator: fc.constantFrom('Exists', 'DoesNotExist') }),
        fc.record({
          key: fc.constantFrom(...labelKeys),
          operator: fc.constantFrom('Gt', 'Lt'),
          values: fc.constantFrom('5', '950', '0', '007').map((value) => [value]),
        }),
      ),
      { maxLength: 3 },
    ),
    matchFields: fc.array(
      fc.record({
        key: fc.constantFrom('metadata.name', 'spec.other'),
        operator: fc.constantFrom('In', 'NotIn'),
        values: fc.constantFrom('n1', 'n2', '').map((value) => [value]),
      }),
      {
        maxLength: 1,
      },
    ),
  },
  { requiredKeys: [] },
);

/** Mostly valid terms, some that do not parse. */
const termArbitrary: fc.Arbitrary<NodeSelectorTerm> = fc.oneof(
  { weight: 6, arbitrary: validTermArbitrary },
  {
    weight: 2,
    arbitrary: fc.record(
      { matchExpressions: fc.array(requirementArbitrary, { maxLength: 3 }), matchFields: fc.array(fieldArbitrary, { maxLength: 1 }) },
      { requiredKeys: [] },
    ),
  },
);

const specOf = (terms: fc.Arbitrary<NodeSelectorTerm>): fc.Arbitrary<PodSpec> =>
  fc
    .record(
      {
        nodeSelector: fc.dictionary(fc.constantFrom(...labelKeys), fc.constantFrom(...labelValues), { maxKeys: 2 }),
        terms: fc.option(fc.array(terms, { maxLength: 3 }), { nil: undefined, freq: 3 }),
        tolerations: fc.array(anyTolerationArbitrary, { maxLength: 5 }),
        nodeName: fc.constantFrom(...nodeNames, ''),
      },
      { requiredKeys: [] },
    )
    .map(({ nodeSelector, terms, tolerations, nodeName }) => ({
      containers: [{ name: 'app' }],
      ...(nodeSelector === undefined ? {} : { nodeSelector }),
      ...(terms === undefined
        ? {}
        : { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } } }),
      ...(tolerations === undefined ? {} : { tolerations }),
      ...(nodeName === undefined || nodeName === '' ? {} : { nodeName }),
    }));
const specArbitrary = specOf(termArbitrary);
/** Every reason short enough to be given whole (the messages of terms that do not parse are long). */
const shortReasonSpecArbitrary = specOf(validTermArbitrary);

const taintArbitrary: fc.Arbitrary<Taint> = fc
  .record({
    key: fc.constantFrom(...taintKeys),
    value: fc.option(fc.constantFrom(...taintValues), { nil: undefined }),
    effect: fc.constantFrom(...taintEffects),
  })
  .map(({ key, value, effect }) => (value === undefined ? { key, effect } : { key, value, effect }));

const nodeArbitrary: fc.Arbitrary<Node> = fc
  .record({
    name: fc.constantFrom(...nodeNames),
    labels: fc.dictionary(fc.constantFrom(...labelKeys), fc.constantFrom(...labelValues), { maxKeys: 4 }),
    taints: fc.array(taintArbitrary, { maxLength: 4 }),
    unschedulable: fc.boolean(),
  })
  .map(({ name, labels, taints, unschedulable }) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels },
    spec: { taints, unschedulable },
  }));

const gateArbitrary: fc.Arbitrary<ComparisonOperatorGate> = fc.boolean().map((on) => ({ TaintTolerationComparisonOperators: on }));

/**
 * The compiled reason is the plain one, or — when the plain one is longer than a reason may be —
 * its beginning, cut where a marker (…) says what was left out.
 */
function assertSameReason(compiled: string | undefined, plain: string | undefined): void {
  if (plain === undefined || compiled === undefined || plain.length <= maxReasonChars) {
    assert.equal(compiled, plain);
    return;
  }
  const cut = compiled.indexOf('…');
  assert.ok(cut > 0 && plain.startsWith(compiled.slice(0, cut)), `${compiled}\nis not a shortening of\n${plain}`);
  assert.ok(compiled.length <= maxReasonChars + 40, `${compiled.length} characters`);
}

function pod(spec: PodSpec): Pod {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec };
}

describe('compiled placement agrees with the plain transcription of upstream', () => {
  it('canonicalInt64 reads what parseCanonicalInt64 reads', () => {
    const digits = fc.stringMatching(/^[-+]?[0-9]{0,22}$/);
    const edges = fc.constantFrom(
      '9223372036854775807',
      '9223372036854775808',
      '-9223372036854775808',
      '-9223372036854775809',
      '0',
      '-0',
      '00',
      '',
      '1'.repeat(25),
      ' 1',
      '1e3',
    );
    fc.assert(
      fc.property(fc.oneof(digits, edges, fc.string()), (value) => {
        assert.equal(canonicalInt64(value), parseCanonicalInt64(value));
      }),
      { ...options, numRuns: 2000 },
    );
  });

  it('indexTolerations finds the first toleration toleratesTaint accepts', () => {
    fc.assert(
      fc.property(
        fc.array(anyTolerationArbitrary, { maxLength: 8 }),
        taintArbitrary,
        gateArbitrary,
        (tolerations: Toleration[], taint, gates) => {
          const want = tolerations.findIndex((toleration) => toleratesTaint(toleration, taint, gates));
          assert.equal(indexTolerations(tolerations, gates).firstTolerating(taint), want);
        },
      ),
      options,
    );
  });

  it('compileNodeAffinity matches exactly when matchRequiredNodeAffinity does, with its first reason', () => {
    fc.assert(
      fc.property(specArbitrary, nodeArbitrary, (spec, node) => {
        const verdict = matchRequiredNodeAffinity(spec, node);
        const compiled = compileNodeAffinity(spec, [node], unlimited());
        assert.equal(compiled.matches(node, unlimited()), verdict.matches);
        assertSameReason(compiled.firstReason(node, unlimited()), verdict.reasons[0]);
      }),
      options,
    );
  });

  it('compilePlacement fits exactly when evaluatePlacement is schedulable, with its first reason', () => {
    fc.assert(
      fc.property(specArbitrary, fc.array(nodeArbitrary, { minLength: 1, maxLength: 4 }), gateArbitrary, (spec, nodes, gates) => {
        const compiled = compilePlacement(pod(spec), gates, nodes, unlimited());
        for (const node of nodes) {
          const placement = evaluatePlacement(pod(spec), node, gates);
          assert.equal(compiled.fits(node, unlimited()), placement.schedulable);
          if (!placement.schedulable) assertSameReason(compiled.firstReason(node, unlimited()), placement.reasons[0] ?? 'not schedulable');
        }
      }),
      options,
    );
  });

  it('at the boundaries: equal values and thresholds, tolerationSeconds 0, first matches, absent labels', () => {
    // One label key, one taint key, few values: every pod and node meet on them.
    const value = fc.constantFrom('5', '7', '007', 'a', '');
    const requirement: fc.Arbitrary<NodeSelectorRequirement> = fc.oneof(
      fc.record({
        key: fc.constant('gen'),
        operator: fc.constantFrom('In', 'NotIn'),
        values: fc.array(value, { minLength: 1, maxLength: 2 }),
      }),
      fc.record({ key: fc.constant('gen'), operator: fc.constantFrom('Exists', 'DoesNotExist') }),
      fc.record({
        key: fc.constant('gen'),
        operator: fc.constantFrom('Gt', 'Lt'),
        values: fc.constantFrom('5', '7', '007').map((bound) => [bound]),
      }),
    );
    const spec: fc.Arbitrary<PodSpec> = fc
      .record({
        terms: fc.array(fc.record({ matchExpressions: fc.array(requirement, { minLength: 1, maxLength: 2 }) }), {
          minLength: 1,
          maxLength: 2,
        }),
        tolerations: fc.array(
          fc.record({
            key: fc.constantFrom('k', ''),
            operator: fc.constantFrom('Equal', 'Exists', 'Gt', 'Lt'),
            value: fc.constantFrom('5', '7', ''),
            effect: fc.constantFrom('NoSchedule', 'NoExecute', ''),
            tolerationSeconds: fc.constantFrom(-1, 0, 1, null),
          }),
          { maxLength: 3 },
        ),
      })
      .map(({ terms, tolerations }) => ({
        containers: [{ name: 'app' }],
        tolerations,
        affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
      }));
    const node: fc.Arbitrary<Node> = fc
      .record({
        label: fc.option(value, { nil: undefined }),
        taints: fc.array(
          fc.record({ key: fc.constant('k'), value: fc.constantFrom('5', '7', ''), effect: fc.constantFrom('NoSchedule', 'NoExecute') }),
          { maxLength: 2 },
        ),
      })
      .map(({ label, taints }) => {
        const labels: Record<string, string> = label === undefined ? {} : { gen: label };
        return { metadata: { name: 'n', labels }, spec: { taints } };
      });
    fc.assert(
      fc.property(spec, node, gateArbitrary, (podSpec, candidate, gates) => {
        const placement = evaluatePlacement(pod(podSpec), candidate, gates);
        const compiled = compilePlacement(pod(podSpec), gates, [candidate], unlimited());
        assert.equal(compiled.fits(candidate, unlimited()), placement.schedulable);
        if (!placement.schedulable) assertSameReason(compiled.firstReason(candidate, unlimited()), placement.reasons[0]);
      }),
      { ...options, numRuns: 1500 },
    );
  });

  it('schedulingWarnings says what it said before the compiled forms, for pods and clusters that small', () => {
    fc.assert(
      fc.property(shortReasonSpecArbitrary, fc.array(nodeArbitrary, { maxLength: 7 }), gateArbitrary, (spec, nodes, gates) => {
        assert.deepEqual(schedulingWarnings(pod(spec), nodes, gates), oracleSchedulingWarnings(pod(spec), nodes, gates));
      }),
      options,
    );
  });
});

/** schedulingWarnings as it was before the compiled forms: O(pod) per node, nothing clipped. */
function oracleSchedulingWarnings(pod: Pod, nodes: readonly Node[], gates: ComparisonOperatorGate): string[] {
  const listNodes = (entries: readonly string[]): string => {
    const named = entries.slice(0, 5).join('; ');
    const rest = entries.length - 5;
    return rest > 0 ? `${named}; and ${rest} more` : named;
  };
  const warnings: string[] = [];
  for (const [index, toleration] of (pod.spec?.tolerations ?? []).entries()) {
    const operator = toleration.operator ?? '';
    const key = toleration.key ?? '';
    if ((operator !== 'Gt' && operator !== 'Lt') || key === '') continue;
    const offending: string[] = [];
    for (const node of nodes) {
      for (const taint of node.spec?.taints ?? []) {
        if (taint.key === key && parseCanonicalInt64(taint.value ?? '') === undefined)
          offending.push(`${node.metadata.name} (${JSON.stringify(taint.value ?? '')})`);
      }
    }
    if (offending.length > 0) {
      warnings.push(
        `spec.tolerations[${index}] (${key} ${operator} ${toleration.value ?? ''}): the taint ${key} has a value that is not a canonical integer on ${listNodes(offending)}; ${operator} never tolerates such a taint`,
      );
    }
  }
  // The new version names three such tolerations and counts the rest; the generator gives at most five tolerations.
  if (warnings.length > 3) {
    warnings.splice(
      3,
      warnings.length - 3,
      `spec.tolerations: ${warnings.length - 3} more Gt/Lt tolerations are on keys whose taints have values that are not canonical integers on some known node; they never tolerate those taints`,
    );
  }
  if (nodes.length === 0) return warnings;
  const pinnedTo = pod.spec?.nodeName ?? '';
  if (pinnedTo !== '' && !nodes.some((node) => node.metadata.name === pinnedTo)) {
    return [...warnings, `spec.nodeName names node "${pinnedTo}", which is not among the ${nodes.length} known nodes`];
  }
  const placements = nodes.map((node) => evaluatePlacement(pod, node, gates));
  if (placements.some((placement) => placement.schedulable)) return warnings;
  const why = placements.map((placement) => `${placement.node}: ${placement.reasons[0] ?? 'not schedulable'}`);
  return [...warnings, `the pod cannot be scheduled on any of the ${nodes.length} known nodes: ${listNodes(why)}`];
}
