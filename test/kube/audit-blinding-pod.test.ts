/**
 * A pod that blinds the audit (issue 18, item 5): kube-apiserver's JSON encoder writes `<`, `>`
 * and `&` as `\u003c`, `\u003e`, `\u0026`, six bytes for one, so a pod of 0.8 MB full of them is
 * 4.8 MB on the wire, over the periodic audit's 4 MiB page bound even alone. The audit halved its
 * page down to that pod and then failed, every run for as long as the pod existed, publishing
 * nothing: a tenant pod outside its group next to it was never reported. Now the pod is read alone
 * with the bound of the largest object the API server can send, and one over even that is counted
 * as undecided while the run goes on.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultFeatureGates } from '../../src/api/feature-gates.js';
import type { AuditSettings } from '../../src/audit/audit-rules.js';
import { auditPace, createPeriodicAudit, type AuditPace } from '../../src/server/periodic-audit.js';
import { createMetrics, type Metrics } from '../../src/http/metrics.js';
import { createApiRequest } from '../../src/kube/api-requests.js';
import { staticClusterFacts } from '../../src/kube/cluster-state-file.js';
import { allPluginNames } from '../../src/plugins/registry.js';
import { loadPolicyDirectory } from '../../src/tenancy/policy-directory.js';
import { allAuditPods, auditNamespaces, auditNodes, policiesDir, storedPod } from '../support/audit-fixtures.js';
import { FakeApiServer, goJson, type KubeObject } from '../support/fake-api-server.js';

const settings: AuditSettings = {
  gates: defaultFeatureGates,
  enabled: new Set(allPluginNames),
  policies: loadPolicyDirectory(policiesDir).set,
  exclusion: { names: new Set(['kube-system']), label: undefined },
  all: false,
};
const facts = staticClusterFacts({ namespaces: auditNamespaces, nodes: auditNodes });

/**
 * 800,000 characters of `<&>` in an annotation (a tenant writes its pods' annotations, up to
 * 256 KiB each... in all, so spread over four): about 0.8 MB as the tenant sent it, 4.8 MB as the
 * API server lists it. No tolerations: it breaks missing-default-tolerations and
 * missing-memory-pressure, so it is seen to be judged when it is read.
 */
const blindingPod = storedPod({
  namespace: 'shared',
  name: 'blinding',
  node: 'plain',
  annotations: Object.fromEntries(Array.from({ length: 4 }, (_, i) => [`example.com/notes-${i}`, '<&>'.repeat(66_666)])),
});

interface Run {
  readonly outcome: 'completed' | 'failed';
  readonly violations: Map<string, number>;
  readonly warnings: { obj: Record<string, unknown>; msg: string }[];
}

/** One periodic audit run against `fake`, at the shipped pace but fast (`pace` overrides). */
async function runOnce(fake: FakeApiServer, pace: Partial<AuditPace> = {}): Promise<Run> {
  const metrics: Metrics = createMetrics({ collectProcessMetrics: false });
  const warnings: Run['warnings'] = [];
  const periodic = createPeriodicAudit({
    intervalMs: 3_600_000,
    request: createApiRequest(fake.kubeConfig()),
    facts,
    settings: () => settings,
    metrics,
    logger: {
      info: () => undefined,
      warn: (obj: Record<string, unknown>, msg: string) => {
        warnings.push({ obj, msg });
      },
      error: () => undefined,
    } as never,
    now: () => 1_700_000_000_000,
    pace: { requestsPerSecond: 1000, sliceMs: 1, ...pace },
  });
  const outcome = await periodic.runOnce();
  const violations = new Map<string, number>();
  for (const value of (await metrics.auditViolations.get()).values) {
    violations.set(`${String(value.labels.namespace)} ${String(value.labels.rule)}`, value.value);
  }
  return { outcome, violations, warnings };
}

async function clusterWith(pods: readonly unknown[]): Promise<FakeApiServer> {
  const fake = await FakeApiServer.start();
  for (const namespace of auditNamespaces) fake.put('namespaces', namespace);
  for (const node of auditNodes) fake.put('nodes', node);
  for (const pod of pods) fake.putPod(pod as KubeObject);
  return fake;
}

describe('a pod that blinds the audit', () => {
  it('is over the page bound only once the API server escapes it: 0.8 MB as written, six times that on the wire', () => {
    const written = Buffer.byteLength(JSON.stringify(blindingPod));
    const sent = Buffer.byteLength(goJson(blindingPod));
    assert.ok(written < 1_000_000, `${written} bytes as written`);
    assert.ok(sent > auditPace.maxPageBytes, `${sent} bytes on the wire`);
    assert.ok(sent < auditPace.maxItemBytes);
  });

  it('a pod over the page bound is read alone with the bound of one object: the run completes and publishes every other namespace too', async () => {
    const clean = await clusterWith(allAuditPods());
    const blinded = await clusterWith([...allAuditPods(), blindingPod]);
    try {
      const before = await runOnce(clean);
      const after = await runOnce(blinded);
      assert.equal(before.outcome, 'completed');
      assert.equal(after.outcome, 'completed', 'the run completes with the pod in the cluster');
      // Everything else is reported as without the pod: a tenant pod outside its group among it.
      const expected = new Map(before.violations);
      for (const rule of ['missing-default-tolerations', 'missing-memory-pressure']) {
        expected.set(`shared ${rule}`, (expected.get(`shared ${rule}`) ?? 0) + 1);
      }
      assert.deepEqual(after.violations, expected, 'the pod itself is judged: its two rules count one more each');
      assert.ok((before.violations.get('tenant-a missing-pair') ?? 0) > 0, 'the fixtures hold a tenant pod outside its group');
      // Halved down to the pod, then the pod alone, once, with the larger bound.
      const alone = blinded.podListRequests.filter((request) => request.limit === '1');
      assert.ok(alone.length >= 2, `${alone.length} requests of one pod`);
      assert.equal(after.warnings.length, 0);
    } finally {
      await clean.close();
      await blinded.close();
    }
  });

  it('a pod over even the bound of one object is counted as undecided by name, and the run completes with everything else', async () => {
    const clean = await clusterWith(allAuditPods());
    const blinded = await clusterWith([...allAuditPods(), blindingPod]);
    try {
      // Bounds below the pod's 4.8 MB on the wire, as an API server whose object limits were raised would send it.
      const pace = { maxPageBytes: 1024 * 1024, maxItemBytes: 2 * 1024 * 1024 };
      const before = await runOnce(clean, pace);
      const after = await runOnce(blinded, pace);
      assert.equal(after.outcome, 'completed');
      assert.deepEqual(after.violations, before.violations, 'every other pod is judged as without it');
      assert.deepEqual(
        after.warnings.map(({ obj, msg }) => ({ namespace: obj.namespace, pod: obj.pod, msg })),
        [{ namespace: 'shared', pod: 'blinding', msg: 'audit could not judge a pod' }],
      );
      assert.match(String(after.warnings[0]?.obj.error), /is more than 2097152 bytes of JSON as the API server sends it/);
    } finally {
      await clean.close();
      await blinded.close();
    }
  });
});
