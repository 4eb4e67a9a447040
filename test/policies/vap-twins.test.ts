/**
 * The ValidatingAdmissionPolicy twins in policies/vap/ evaluated with @marcbachmann/cel-js on the
 * webhook's own fixtures (test/fixtures/reviews), and compared with the webhook's golden answer.
 * The evaluation follows the API server's order: matchConditions (any false: the policy does not
 * apply, allowed), then `variables` in order (each may read the earlier ones), then every
 * validation (all true: allowed).
 *
 * A VAP runs after every mutating webhook, so an allowed mutating fixture is judged on the object
 * with its golden patch applied; a denied one on the object as sent. Its `namespaceObject` is the
 * namespace of the cluster state the fixture ran against.
 *
 * Which fixtures each twin applies to:
 * - dedicated-by-namespace-label: every pod fixture run with `--policies=policies`, except
 *   foreign-nodename-create and unknown-nodename-create: a VAP cannot read the named Node (or
 *   learn that there is none; documented in the twin); and the conflict-namespace fixtures: the
 *   twin is one policy, and a conflict is between two. The prefix policy's fixture applies too:
 *   the label twin must let it through.
 * - toleration-comparison-operators: every pod fixture run with the gate on (the twin's cluster),
 *   and every allowed pod fixture without a Gt/Lt toleration (the twin must deny nothing else).
 *   Gate-off fixtures with Gt/Lt do not apply: there the API server itself refuses Gt/Lt before
 *   any validating admission runs.
 *
 * cel-js and Kubernetes CEL: the twins use only functions both have (the allow-list below is the
 * standard CEL library plus optional types, which Kubernetes enables since 1.28); no Kubernetes
 * extension library (strings, lists, regex, quantity, ip/cidr, authz) is needed, so none is
 * implemented here. The last test keeps it that way.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Environment } from '@marcbachmann/cel-js';
import jsonpatch from 'fast-json-patch';
import { parseAllDocuments } from 'yaml';
import { parseClusterState, type ClusterState } from '../../src/kube/cluster-state-file.js';
import { toCelValue } from '../../src/tenancy/cel.js';
import { walkCel } from '../../src/tenancy/cel-ast.js';
import { fixturesDir, loadReviewFixtures, type ReviewFixture } from '../support/harness.js';

const root = join(import.meta.dirname, '..', '..');

interface NamedExpression {
  name: string;
  expression: string;
}
interface Vap {
  metadata: { name: string };
  spec: {
    matchConditions?: NamedExpression[];
    variables?: NamedExpression[];
    validations: { expression: string; messageExpression?: string }[];
  };
}

function loadTwin(file: string): Vap {
  const documents = parseAllDocuments(readFileSync(join(root, 'policies', 'vap', file), 'utf8')).map(
    (document) => document.toJS() as { kind: string },
  );
  const policy = documents.find((document) => document.kind === 'ValidatingAdmissionPolicy');
  assert.ok(policy, `${file} has no ValidatingAdmissionPolicy`);
  assert.ok(
    documents.some((document) => document.kind === 'ValidatingAdmissionPolicyBinding'),
    `${file} has no binding`,
  );
  return policy as unknown as Vap;
}

const environment = ['object', 'oldObject', 'namespaceObject', 'request', 'variables'].reduce(
  (env, name) => env.registerVariable(name, 'dyn'),
  new Environment({ enableOptionalTypes: true }),
);

interface Verdict {
  allowed: boolean;
  failed: string[];
}

/** The API server's evaluation of one policy for one request. */
function evaluateTwin(policy: Vap, inputs: { object: unknown; oldObject: unknown; namespaceObject: unknown; request: unknown }): Verdict {
  const variables: Record<string, unknown> = {};
  const context = {
    object: toCelValue(inputs.object),
    oldObject: toCelValue(inputs.oldObject),
    namespaceObject: toCelValue(inputs.namespaceObject),
    request: toCelValue(inputs.request),
    variables,
  };
  for (const condition of policy.spec.matchConditions ?? []) {
    if (environment.evaluate(condition.expression, context) !== true) {
      return { allowed: true, failed: [] };
    }
  }
  for (const variable of policy.spec.variables ?? []) {
    variables[variable.name] = environment.evaluate(variable.expression, context);
  }
  const failed = policy.spec.validations
    .filter((validation) => environment.evaluate(validation.expression, context) !== true)
    .map((validation) =>
      validation.messageExpression === undefined
        ? validation.expression
        : String(environment.evaluate(validation.messageExpression, context)),
    );
  return { allowed: failed.length === 0, failed };
}

interface Golden {
  response: { allowed: boolean; patch?: string };
}

function golden(fixture: ReviewFixture): Golden {
  return JSON.parse(readFileSync(join(fixturesDir, 'golden', `${fixture.name}.json`), 'utf8')) as Golden;
}

const clusterStates = new Map<string, ClusterState>();

/** The cluster state the fixture's review ran against (its `--cluster-state`, else the tenancy cluster). */
function clusterStateOf(fixture: ReviewFixture): ClusterState {
  const flag = '--cluster-state=';
  const file = fixture.args.find((arg) => arg.startsWith(flag))?.slice(flag.length) ?? 'test/fixtures/config/tenancy-cluster.yaml';
  let state = clusterStates.get(file);
  if (state === undefined) {
    state = parseClusterState(readFileSync(join(fixturesDir, '..', '..', file), 'utf8'), file);
    clusterStates.set(file, state);
  }
  return state;
}

/** What the API server hands a VAP for the fixture: the object after the mutating webhooks. */
function twinInputs(fixture: ReviewFixture): { object: unknown; oldObject: unknown; namespaceObject: unknown; request: unknown } {
  const request = fixture.review.request;
  const answer = golden(fixture).response;
  let object: unknown = request.object;
  if (fixture.webhook === 'mutate' && answer.allowed && answer.patch !== undefined) {
    const patch = JSON.parse(Buffer.from(answer.patch, 'base64').toString('utf8')) as jsonpatch.Operation[];
    object = jsonpatch.applyPatch(structuredClone(request.object), patch).newDocument;
  }
  const namespace = typeof request.namespace === 'string' ? request.namespace : '';
  const namespaceObject = clusterStateOf(fixture).namespaces.find((candidate) => candidate.metadata.name === namespace) ?? {
    metadata: { name: namespace, labels: { 'kubernetes.io/metadata.name': namespace } },
  };
  return {
    object,
    oldObject: request.oldObject ?? null,
    namespaceObject,
    request: { operation: request.operation, namespace, name: request.name ?? '' },
  };
}

function isPodFixture(fixture: ReviewFixture): boolean {
  const resource = fixture.review.request.resource as { resource?: string } | undefined;
  return resource?.resource === 'pods' && (fixture.review.request.subResource ?? '') === '' && fixture.review.request.object !== null;
}

function usesComparison(fixture: ReviewFixture): boolean {
  const object = fixture.review.request.object as { spec?: { tolerations?: { operator?: string }[] } } | null;
  return (object?.spec?.tolerations ?? []).some((toleration) => toleration.operator === 'Gt' || toleration.operator === 'Lt');
}

const fixtures = loadReviewFixtures();

describe('the dedicated-by-namespace-label twin agrees with the webhook', () => {
  const twin = loadTwin('dedicated-by-namespace-label.yaml');
  const beyondTwin = new Set([
    'foreign-nodename-create',
    'unknown-nodename-create',
    'conflict-namespace-label-update',
    'conflict-namespace-toleration-added-update',
  ]);
  const applicable = fixtures.filter(
    (fixture) => isPodFixture(fixture) && fixture.args.includes('--policies=policies') && !beyondTwin.has(fixture.name),
  );

  it('applies to the tenancy fixtures: tenant, foreign toleration, infrastructure, exempt, prefix, update', () => {
    assert.deepEqual(
      applicable.map((fixture) => fixture.name),
      [
        'exempt-tenant-pod-create',
        'foreign-exists-toleration-create',
        'foreign-toleration-added-update',
        'gt-toleration-non-integer-taint-warning-create',
        'infrastructure-tolerate-everything-create',
        'node-selector-tenant-pod-create',
        'non-tenant-pod-create',
        'prefix-tenant-pod-create',
        'self-exempt-label-tenant-pod-create',
        'tenant-daemonset-pod-from-controller-create',
        'tenant-daemonset-pod-matchfields-create',
        'tenant-group-without-nodes-warning-create',
        'tenant-pod-after-mutation-create',
        'tenant-pod-conflicting-nodeselector-create',
        'tenant-pod-create',
        'tenant-pod-skipped-mutation-create',
        'tenant-pod-two-ored-terms-create',
      ],
    );
  });

  for (const fixture of applicable) {
    it(`${fixture.description}: the twin ${golden(fixture).response.allowed ? 'allows' : 'denies'} it too`, () => {
      const verdict = evaluateTwin(twin, twinInputs(fixture));
      assert.equal(verdict.allowed, golden(fixture).response.allowed, `twin failures: ${verdict.failed.join(' | ')}`);
    });
  }

  it('a foreign toleration the running pod already had is not judged again on UPDATE', () => {
    const fixture = fixtures.find((candidate) => candidate.name === 'foreign-toleration-added-update');
    assert.ok(fixture);
    const inputs = twinInputs(fixture);
    const verdict = evaluateTwin(twin, { ...inputs, oldObject: inputs.object });
    assert.equal(verdict.allowed, true);
  });

  it("a kubelet's mirror pod is left alone by its matchCondition; a tenant's pod carrying the annotation is not", () => {
    const fixture = fixtures.find((candidate) => candidate.name === 'tenant-pod-skipped-mutation-create');
    assert.ok(fixture);
    const inputs = twinInputs(fixture);
    const object = structuredClone(inputs.object) as { metadata: { annotations?: Record<string, string> } };
    object.metadata.annotations = { 'kubernetes.io/config.mirror': 'abc' };
    const request = inputs.request as { userInfo?: unknown };
    const kubelet = { username: 'system:node:gpu-1', groups: ['system:nodes', 'system:authenticated'] };
    assert.equal(evaluateTwin(twin, { ...inputs, object, request: { ...request, userInfo: kubelet } }).allowed, true);
    assert.equal(evaluateTwin(twin, { ...inputs, object, request: { ...request, userInfo: { username: 'alice' } } }).allowed, false);
  });

  it('a user named system:node:<name> outside the group system:nodes is no kubelet: its mirror-annotated pod is judged', () => {
    const fixture = fixtures.find((candidate) => candidate.name === 'tenant-pod-skipped-mutation-create');
    assert.ok(fixture);
    const inputs = twinInputs(fixture);
    const object = structuredClone(inputs.object) as { metadata: { annotations?: Record<string, string> } };
    object.metadata.annotations = { 'kubernetes.io/config.mirror': 'abc' };
    const request = inputs.request as { userInfo?: unknown };
    const named = { username: 'system:node:gpu-1', groups: ['system:authenticated'] };
    assert.equal(evaluateTwin(twin, { ...inputs, object, request: { ...request, userInfo: named } }).allowed, false);
  });
});

describe('the toleration-comparison-operators twin agrees with the webhook', () => {
  const twin = loadTwin('toleration-comparison-operators.yaml');
  const gateOn = fixtures.filter(
    (fixture) => isPodFixture(fixture) && fixture.args.includes('--feature-gates=TaintTolerationComparisonOperators=true'),
  );
  const withoutComparison = fixtures.filter(
    (fixture) => isPodFixture(fixture) && !usesComparison(fixture) && golden(fixture).response.allowed,
  );

  it('applies to the gate-on Gt fixtures: canonical, non-canonical, out of range, and a non-integer taint (a warning)', () => {
    assert.deepEqual(
      gateOn.map((fixture) => fixture.name),
      [
        'gt-gate-on-canonical-create',
        'gt-gate-on-non-canonical-create',
        'gt-gate-on-out-of-range-create',
        'gt-toleration-non-integer-taint-warning-create',
      ],
    );
  });

  for (const fixture of gateOn) {
    it(`${fixture.description}: the twin ${golden(fixture).response.allowed ? 'allows' : 'denies'} it too`, () => {
      assert.equal(evaluateTwin(twin, twinInputs(fixture)).allowed, golden(fixture).response.allowed);
    });
  }

  for (const fixture of withoutComparison) {
    it(`${fixture.description}: no Gt/Lt, so the twin allows it as the webhook does`, () => {
      assert.equal(evaluateTwin(twin, twinInputs(fixture)).allowed, true);
    });
  }

  const values: { name: string; value: string | undefined; allowed: boolean }[] = [
    { name: 'zero is canonical', value: '0', allowed: true },
    { name: 'a negative value is canonical', value: '-5', allowed: true },
    { name: 'the int64 maximum is within range', value: '9223372036854775807', allowed: true },
    { name: 'one above the int64 maximum is out of range', value: '9223372036854775808', allowed: false },
    { name: 'the int64 minimum is within range', value: '-9223372036854775808', allowed: true },
    { name: 'one below the int64 minimum is out of range', value: '-9223372036854775809', allowed: false },
    { name: 'a 20-digit value is out of range', value: '12345678901234567890', allowed: false },
    { name: 'minus zero is not canonical', value: '-0', allowed: false },
    { name: 'a leading plus is not canonical', value: '+5', allowed: false },
    { name: 'a leading zero is not canonical', value: '0550', allowed: false },
    { name: 'an empty value is not an integer', value: '', allowed: false },
    { name: 'an absent value is not an integer', value: undefined, allowed: false },
    { name: 'a word is not an integer', value: 'high', allowed: false },
  ];
  for (const row of values) {
    it(`Gt with value ${JSON.stringify(row.value)}: ${row.name}`, () => {
      const toleration = {
        key: 'example.com/cpu-generation',
        operator: 'Gt',
        effect: 'NoSchedule',
        ...(row.value === undefined ? {} : { value: row.value }),
      };
      const verdict = evaluateTwin(twin, {
        object: { metadata: {}, spec: { tolerations: [toleration] } },
        oldObject: null,
        namespaceObject: { metadata: { name: 'default' } },
        request: { operation: 'CREATE' },
      });
      assert.equal(verdict.allowed, row.allowed);
    });
  }
});

/** Standard CEL functions and macros, and the optional-type functions Kubernetes enables. */
const commonFunctions = new Set([
  'size',
  'matches',
  'startsWith',
  'endsWith',
  'contains',
  'int',
  'string',
  'has',
  'all',
  'exists',
  'exists_one',
  'map',
  'filter',
  'orValue',
  'hasValue',
  'value',
  'optional.of',
  'optional.none',
]);

function functionsIn(node: unknown, out: Set<string>): Set<string> {
  walkCel(node, (ast) => {
    if ((ast.op === 'call' || ast.op === 'rcall') && Array.isArray(ast.args) && typeof ast.args[0] === 'string') {
      out.add(ast.args[0]);
    }
    return true;
  });
  return out;
}

describe('the twins stay within the CEL that both Kubernetes and cel-js have', () => {
  for (const file of ['dedicated-by-namespace-label.yaml', 'toleration-comparison-operators.yaml']) {
    it(`${file} calls only standard CEL and optional-type functions`, () => {
      const policy = loadTwin(file);
      const expressions = [
        ...(policy.spec.matchConditions ?? []).map((condition) => condition.expression),
        ...(policy.spec.variables ?? []).map((variable) => variable.expression),
        ...policy.spec.validations.flatMap((validation) => [
          validation.expression,
          ...(validation.messageExpression === undefined ? [] : [validation.messageExpression]),
        ]),
      ];
      const used = new Set<string>();
      for (const expression of expressions) {
        functionsIn(environment.parse(expression).ast, used);
      }
      assert.deepEqual(
        [...used].filter((name) => !commonFunctions.has(name)),
        [],
      );
    });
  }
});
