/**
 * The ValidatingAdmissionPolicy twins shipped in policies/vap/, on a real kube-apiserver (VAP is
 * GA in 1.35) beside tolerator's webhooks, judged on the cases test/policies/vap-twins.test.ts
 * evaluates offline: the same review fixtures (test/fixtures/reviews), their namespaces and nodes
 * (test/fixtures/config/tenancy-cluster.yaml, pod-node-selector-cluster.yaml), tolerator serving
 * `--policies policies`, the gate TaintTolerationComparisonOperators on (the Gt/Lt twin's cluster).
 *
 * Every case is sent twice as a dry-run create (nothing is stored): first with only the webhooks
 * installed, then with the twins installed too, as shipped (bindings with `validationActions:
 * [Deny]` and the webhooks' namespace selector). kube-apiserver runs a VAP after the mutating
 * webhooks and before the validating ones, so the second answer shows the twin's verdict: a case
 * the webhook allowed must still be allowed (the twin allowed it), and a case the validating
 * webhook refused must now be refused by the twin itself (else the twin let it through to the
 * webhook). A case refused before any validating admission (by the mutating webhook, or by the API
 * server's own validation) is refused alike both times and says nothing about the twin.
 *
 * kube-controller-manager runs for its ValidatingAdmissionPolicy status controller, which
 * type-checks each policy's CEL against the API server's schema (the offline test checks it with
 * untyped CEL only).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { skipWithoutControlPlane } from '../cluster/binaries.js';
import {
  apiError,
  asKubernetesObject,
  createObject,
  plain,
  startToleratorOnCluster,
  type Manifest,
  type ToleratorOnCluster,
} from '../cluster/tolerator-on-cluster.js';
import { fixturesDir, loadReviewFixtures, type ReviewFixture } from '../support/harness.js';
import { ROOT } from '../support/rendered-manifests.js';

const skip = skipWithoutControlPlane();

/**
 * The fixtures the offline test applies each twin to (its `applicable` and `gateOn` lists), but
 * for the UPDATE one, which is sent below against a stored pod.
 */
const cases = [
  'exempt-tenant-pod-create',
  'foreign-exists-toleration-create',
  'gt-gate-on-canonical-create',
  'gt-gate-on-non-canonical-create',
  'gt-gate-on-out-of-range-create',
  'gt-toleration-non-integer-taint-warning-create',
  'infrastructure-tolerate-everything-create',
  'node-selector-tenant-pod-create',
  'non-tenant-pod-create',
  'prefix-tenant-pod-create',
  'self-exempt-label-tenant-pod-create',
  'tenant-daemonset-pod-matchfields-create',
  'tenant-group-without-nodes-warning-create',
  'tenant-pod-after-mutation-create',
  'tenant-pod-conflicting-nodeselector-create',
  'tenant-pod-create',
  'tenant-pod-skipped-mutation-create',
  'tenant-pod-two-ored-terms-create',
];

const twinNames = {
  label: 'tolerator.dev-dedicated-by-namespace-label',
  comparison: 'tolerator.dev-toleration-comparison-operators',
};

function documents(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((document) => document.toJS() as Manifest);
}

/** The namespaces of both fixture cluster states (each name once) and the tenancy cluster's nodes, Ready. */
function clusterObjects(): Manifest[] {
  const items = (file: string): Manifest[] => (documents(join(fixturesDir, 'config', file))[0] as unknown as { items: Manifest[] }).items;
  const tenancy = items('tenancy-cluster.yaml');
  const names = new Set(tenancy.filter((item) => item.kind === 'Namespace').map((item) => item.metadata.name));
  const selectorNamespaces = items('pod-node-selector-cluster.yaml').filter(
    (item) => item.kind === 'Namespace' && !names.has(item.metadata.name),
  );
  return [...tenancy, ...selectorNamespaces].map((item) =>
    item.kind === 'Node' ? { ...item, status: { conditions: [{ type: 'Ready', status: 'True' }] } } : item,
  );
}

/** A fixture's pod as a client would send it: without what the API server assigns. */
function sendable(object: unknown): Manifest {
  const assigned = new Set(['uid', 'resourceVersion', 'creationTimestamp', 'managedFields']);
  const copy = structuredClone(object) as Manifest;
  const metadata = Object.fromEntries(Object.entries(copy.metadata).filter(([field]) => !assigned.has(field)));
  return Object.fromEntries(Object.entries({ ...copy, metadata }).filter(([field]) => field !== 'status')) as unknown as Manifest;
}

type Decider = 'allowed' | 'twin' | 'validating webhook' | 'mutating webhook' | 'kube-apiserver';
interface Verdict {
  readonly decider: Decider;
  readonly code?: number;
  readonly message?: string;
}

function verdictOf(error: unknown): Verdict {
  const { code, status } = apiError(error);
  const message = status.message ?? '';
  const decider: Decider = message.includes("ValidatingAdmissionPolicy '")
    ? 'twin'
    : message.startsWith('admission webhook "validate.tolerator.dev"')
      ? 'validating webhook'
      : message.startsWith('admission webhook "mutate.tolerator.dev"')
        ? 'mutating webhook'
        : 'kube-apiserver';
  return { decider, code, message };
}

async function send(request: Promise<unknown>): Promise<Verdict> {
  try {
    await request;
    return { decider: 'allowed' };
  } catch (error) {
    return verdictOf(error);
  }
}

describe('the ValidatingAdmissionPolicy twins on kube-apiserver, beside the webhooks', { skip }, () => {
  let dir: string;
  let cluster: ToleratorOnCluster;
  const fixtures = new Map<string, ReviewFixture>(loadReviewFixtures().map((fixture) => [fixture.name, fixture]));
  const webhookOnly = new Map<string, Verdict>();
  const withTwins = new Map<string, Verdict>();
  /** The stored pod the UPDATE fixture changes, and that UPDATE's body. */
  let update: { stored: Manifest; changed: Manifest } | undefined;

  const sendCase = (name: string): Promise<Verdict> => {
    const fixture = fixtures.get(name);
    assert.ok(fixture, name);
    return send(createObject(cluster.objects, sendable(fixture.review.request.object), 'All'));
  };
  const sendUpdate = (): Promise<Verdict> => {
    assert.ok(update);
    return send(cluster.objects.replace(asKubernetesObject(update.changed), undefined, 'All'));
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-e2e-vap-'));
    cluster = await startToleratorOnCluster({
      dir,
      plane: { featureGates: 'TaintTolerationComparisonOperators=true', controllerManager: true },
      serveArgs: ['--policies', join(ROOT, 'policies')],
    });
    for (const object of clusterObjects()) await createObject(cluster.objects, object);

    // foreign-toleration-added-update: its old pod stored (without the owner the fixture names,
    // which the garbage collector would delete it for), then the tolerations its new pod adds.
    const fixture = fixtures.get('foreign-toleration-added-update');
    assert.ok(fixture);
    const request = fixture.review.request as unknown as { object: Manifest; oldObject: Manifest };
    const base = sendable(request.oldObject);
    delete (base.metadata as { ownerReferences?: unknown }).ownerReferences;
    const stored = await createObject(cluster.objects, base);
    const tolerationsIn = (object: Manifest): unknown[] => (object.spec as { tolerations?: unknown[] }).tolerations ?? [];
    const old = new Set(tolerationsIn(request.oldObject).map((toleration) => JSON.stringify(toleration)));
    const added = tolerationsIn(request.object).filter((toleration) => !old.has(JSON.stringify(toleration)));
    assert.ok(added.length > 0);
    const changed = structuredClone(stored);
    (changed.spec as { tolerations: unknown[] }).tolerations = [...tolerationsIn(stored), ...added];
    update = { stored, changed };

    for (const name of cases) webhookOnly.set(name, await sendCase(name));
    webhookOnly.set('foreign-toleration-added-update', await sendUpdate());

    for (const file of ['dedicated-by-namespace-label.yaml', 'toleration-comparison-operators.yaml']) {
      for (const object of documents(join(ROOT, 'policies', 'vap', file))) await createObject(cluster.objects, object);
    }
    // A new policy and binding reach the admission chain through informers, a moment after they
    // are created: wait (at most 60 s) until a case the webhook refused is refused by the twin.
    const deadline = Date.now() + 60_000;
    while ((await sendCase('foreign-exists-toleration-create')).decider !== 'twin') {
      assert.ok(Date.now() < deadline, 'the twins did not take effect within 60 s');
      await sleep(200);
    }
    for (const name of cases) withTwins.set(name, await sendCase(name));
    withTwins.set('foreign-toleration-added-update', await sendUpdate());
  });
  after(async () => {
    await (cluster as ToleratorOnCluster | undefined)?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("kube-controller-manager's type check of both twins against the API server's schema finds no problem", async () => {
    const deadline = Date.now() + 60_000;
    for (const name of Object.values(twinNames)) {
      for (;;) {
        const policy = plain(
          await cluster.objects.read({
            apiVersion: 'admissionregistration.k8s.io/v1',
            kind: 'ValidatingAdmissionPolicy',
            metadata: { name },
          }),
        ) as Manifest & { metadata: { generation?: number }; status?: { observedGeneration?: number; typeChecking?: unknown } };
        if (policy.status?.typeChecking !== undefined && policy.status.observedGeneration === policy.metadata.generation) {
          assert.deepEqual(policy.status.typeChecking, {}, `${name}: no expressionWarnings`);
          break;
        }
        assert.ok(Date.now() < deadline, `${name} was not type-checked within 60 s`);
        await sleep(250);
      }
    }
  });

  for (const name of [...cases, 'foreign-toleration-added-update']) {
    it(`${name}: the twin agrees with the webhook`, () => {
      const before = webhookOnly.get(name);
      const now = withTwins.get(name);
      assert.ok(before && now);
      if (before.decider === 'validating webhook') {
        // Refused by the twin before the webhook was asked, with the code of its reason.
        assert.equal(now.decider, 'twin', now.message);
        assert.equal(now.code, before.code);
        assert.match(
          now.message ?? '',
          new RegExp(`ValidatingAdmissionPolicy '${twinNames.label}' with binding '${twinNames.label}' denied request: `),
        );
      } else {
        assert.deepEqual(now, before);
      }
    });
  }

  it('the cases cover both verdicts: the twin refuses some and allows others', () => {
    const deciders = [...withTwins.values()].map((verdict) => verdict.decider);
    assert.ok(deciders.filter((decider) => decider === 'twin').length >= 2, deciders.join(', '));
    assert.ok(deciders.filter((decider) => decider === 'allowed').length >= 10, deciders.join(', '));
  });

  it('a foreign toleration a pod already had is not judged again on UPDATE, and one the UPDATE adds is, by the twin', async () => {
    // Such a pod exists when it was created while its namespace opted out of review
    // (tolerator.dev/ignore=true, which the webhooks' and the bindings' selectors leave out).
    const foreign = (group: string): Record<string, string> => ({
      key: 'dedicated',
      operator: 'Equal',
      value: group,
      effect: 'NoSchedule',
    });
    const namespace: Manifest = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'opted-out', labels: { 'tolerator.dev/ignore': 'true' } },
    };
    await createObject(cluster.objects, namespace);
    const legacy = (name: string, tolerations: unknown[]): Manifest => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'opted-out' },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }], tolerations },
    });
    const stored = await createObject(cluster.objects, legacy('legacy', [foreign('pci')]));
    const current = plain(await cluster.objects.read({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'opted-out' } })) as Manifest;
    await cluster.objects.replace(asKubernetesObject({ ...current, metadata: { ...current.metadata, labels: {} } }));
    // The API server matches selectors against its namespace cache: wait until a new pod with the
    // same toleration there is refused by the twin (at most 30 s).
    const deadline = Date.now() + 30_000;
    while ((await send(createObject(cluster.objects, legacy('probe', [foreign('pci')]), 'All'))).decider !== 'twin') {
      assert.ok(Date.now() < deadline, 'the namespace was not reviewed within 30 s of losing its opt-out label');
      await sleep(200);
    }
    const relabelled = { ...stored, metadata: { ...stored.metadata, labels: { touched: 'yes' } } };
    assert.deepEqual(await send(cluster.objects.replace(asKubernetesObject(relabelled), undefined, 'All')), { decider: 'allowed' });
    const spec = stored.spec as { tolerations: unknown[] };
    const added = { ...stored, spec: { ...spec, tolerations: [...spec.tolerations, foreign('gpu')] } };
    const verdict = await send(cluster.objects.replace(asKubernetesObject(added), undefined, 'All'));
    assert.equal(verdict.decider, 'twin', verdict.message);
    assert.match(verdict.message ?? '', /may not tolerate another group's dedicated taint/);
  });

  it('a non-canonical or out-of-range Gt value is refused by the API server itself, before the twin or the webhook could decide', () => {
    for (const name of ['gt-gate-on-non-canonical-create', 'gt-gate-on-out-of-range-create']) {
      for (const verdicts of [webhookOnly, withTwins]) {
        const verdict = verdicts.get(name);
        assert.equal(verdict?.decider, 'kube-apiserver', verdict?.message);
        assert.equal(verdict.code, 422);
        assert.match(verdict.message ?? '', /^Pod "gauge-0" is invalid: spec\.tolerations\[2\]\.value: Invalid value: /);
      }
    }
  });
});
