/**
 * Feature gates that follow the cluster, through the real app: a fake API server reports
 * TaintTolerationComparisonOperators on /metrics, the gate source reads it, and the validating
 * webhook answers a pod with a `Gt` toleration as that API server would — refused with its
 * message while the gate is off, allowed after the gate turns on between two reads.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { describe, it } from 'node:test';
import request from 'supertest';
import { emptyClusterFacts } from '../../src/admission/cluster-facts.js';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { pipelineFor } from '../../src/admission/pipeline-settings.js';
import { emptyPolicySet } from '../../src/tenancy/policy-set.js';
import { createApp } from '../../src/http/app.js';
import { createMetrics } from '../../src/http/metrics.js';
import { readClusterFeatureGates } from '../../src/kube/cluster-feature-gates.js';
import { startFeatureGateSource, type FeatureGateSource } from '../../src/kube/feature-gate-source.js';
import { versionInfo } from '../support/api-server-answers.js';
import { loadReviewFixture, silentLogger } from '../support/harness.js';
import { FakeApiServer } from '../support/fake-api-server.js';

interface Served {
  readonly fake: FakeApiServer;
  readonly source: FeatureGateSource;
  readonly app: ReturnType<typeof createApp>;
}

/**
 * The app as serve composes it, its gates read from a fake API server; `args` are tolerator's
 * flags, `prepare` sets the fake's answers before the first read.
 */
async function served(t: TestContext, args: readonly string[] = [], prepare?: (fake: FakeApiServer) => void): Promise<Served> {
  const fake = await FakeApiServer.start();
  prepare?.(fake);
  const settings = readAdmissionSettings(parseFlags(args, admissionFlags));
  const source = startFeatureGateSource({
    explicit: settings.explicitGates,
    read: () => readClusterFeatureGates(fake.kubeConfig()),
    refreshIntervalMs: 0,
    logger: silentLogger,
  });
  t.after(async () => {
    source.stop();
    await fake.close();
  });
  await source.refresh();
  const metrics = createMetrics({ collectProcessMetrics: false, featureGateState: () => source.resolved() });
  const app = createApp({
    pipeline: pipelineFor(
      settings,
      emptyClusterFacts,
      () => emptyPolicySet,
      () => source.current(),
    ),
    logger: silentLogger,
    metrics,
    readiness: { check: () => ({ ready: source.settled(), reasons: [] }), detail: () => source.detail() },
    now: () => 0,
  });
  return { fake, source, app };
}

/** A pod with the toleration `example.com/cpu-generation Gt 950`. */
const gtReview = JSON.stringify(loadReviewFixture('gt-gate-off-create').review);
const apiServerMessage =
  'Pod "gauge-0" is invalid: spec.tolerations[2].operator: Unsupported value: "Gt": supported values: "Equal", "Exists", "Lt", "Gt"';

async function validate(app: Served['app']): Promise<{ allowed: boolean; status?: { code: number; message: string } }> {
  const res = await request(app).post('/validate').set('Content-Type', 'application/json').send(gtReview);
  assert.equal(res.status, 200);
  return (res.body as { response: { allowed: boolean; status?: { code: number; message: string } } }).response;
}

describe('feature gates read from the cluster, in reviews', () => {
  it('refuses a Gt toleration with the API server message while /metrics says 0, and allows it once a later read says 1', async (t) => {
    const { fake, source, app } = await served(t);
    fake.reportFeatureGates({ TaintTolerationComparisonOperators: false, PodLevelResources: true });
    await source.refresh();

    const before = await validate(app);
    assert.equal(before.allowed, false);
    assert.equal(before.status?.code, 422);
    assert.equal(before.status.message, apiServerMessage);

    fake.reportFeatureGates({ TaintTolerationComparisonOperators: true, PodLevelResources: true });
    await source.refresh();

    assert.equal((await validate(app)).allowed, true);
    const metrics = await request(app).get('/metrics');
    assert.match(metrics.text, /^tolerator_feature_gate_enabled\{name="TaintTolerationComparisonOperators",source="cluster-metrics"\} 1$/m);
  });

  it('falls back to the version default when /metrics is refused (403): v1.35 has the gate, alpha and off', async (t) => {
    const { source, app } = await served(t, [], (fake) => {
      fake.requireMetricsToken('only-for-admins');
      fake.answerVersion({ kind: 'info', info: versionInfo('v1.35.2-eks-4a7b1c3') });
    });

    assert.equal((await validate(app)).status?.message, apiServerMessage);
    assert.equal(source.resolved().TaintTolerationComparisonOperators.source, 'cluster-version');
  });

  it('takes the newest entry of the table for a version newer than it, and nothing for one older than a gate', async (t) => {
    const { fake, source } = await served(t);
    fake.answerMetrics({ kind: 'status', code: 403 });
    fake.answerVersion({ kind: 'info', info: { major: '1', minor: '40+', gitVersion: 'v1.40.1-gke.100' } });
    await source.refresh();
    assert.deepEqual(source.resolved().PodLevelResources, {
      enabled: true,
      source: 'cluster-version',
      version: { version: { major: 1, minor: 40 }, default: { enabled: true, stage: 'BETA', beyondTable: true } },
    });

    fake.answerVersion({ kind: 'info', info: versionInfo('v1.31.4') });
    await source.refresh();
    assert.deepEqual(source.current(), {
      TaintTolerationComparisonOperators: false,
      PodLevelResources: false,
      PodLevelResourcesFixKubeletQOSClass: false,
      DRADeviceTaints: false,
      DRADeviceTaintRules: false,
    });
  });

  it('falls back to the version when /metrics answers garbage, and still answers reviews', async (t) => {
    const garbage = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 7919) % 256)).toString('latin1');
    const { source, app } = await served(t, [], (fake) => {
      fake.answerMetrics({ kind: 'text', text: garbage });
    });

    assert.equal(source.resolved().TaintTolerationComparisonOperators.source, 'cluster-version');
    assert.equal((await validate(app)).status?.message, apiServerMessage);
  });

  it('keeps the answer /metrics gave while a later read of it fails at the same version, and takes the default after an upgrade', async (t) => {
    const { fake, source, app } = await served(t);
    fake.reportFeatureGates({ TaintTolerationComparisonOperators: true, PodLevelResources: true });
    await source.refresh();
    assert.equal((await validate(app)).allowed, true);

    // The API server, still v1.35 with the alpha gate switched on by its flags, fails one read.
    fake.answerMetrics({ kind: 'status', code: 503 });
    await source.refresh();
    assert.equal((await validate(app)).allowed, true);
    assert.equal(source.resolved().TaintTolerationComparisonOperators.source, 'cluster-metrics');

    // Upgraded to v1.36 (the gate still alpha and off by default), /metrics still unreadable.
    fake.answerVersion({ kind: 'info', info: versionInfo('v1.36.0') });
    await source.refresh();
    assert.equal((await validate(app)).status?.message, apiServerMessage);
    assert.equal(source.resolved().TaintTolerationComparisonOperators.source, 'cluster-version');
  });

  it('keeps an explicit --feature-gates value against the cluster', async (t) => {
    const { fake, source, app } = await served(t, ['--feature-gates=TaintTolerationComparisonOperators=false']);
    fake.reportFeatureGates({ TaintTolerationComparisonOperators: true });
    await source.refresh();

    assert.equal((await validate(app)).allowed, false);
    assert.equal(source.resolved().TaintTolerationComparisonOperators.source, 'flag');
  });

  it('shows each gate with its source on /readyz?verbose, and only the verdict on /readyz', async (t) => {
    const { fake, source, app } = await served(t);
    fake.reportFeatureGates({ TaintTolerationComparisonOperators: true });
    fake.answerVersion({ kind: 'info', info: versionInfo('v1.35.2') });
    await source.refresh();

    const verbose = await request(app).get('/readyz?verbose');
    assert.equal(verbose.status, 200);
    const lines = verbose.text.trimEnd().split('\n');
    assert.deepEqual(lines.slice(0, 6), [
      'ok',
      'feature gate TaintTolerationComparisonOperators=true source=cluster-metrics',
      'feature gate PodLevelResources=true source=cluster-version (v1.35: beta default)',
      'feature gate PodLevelResourcesFixKubeletQOSClass=false source=cluster-version (v1.35: not in that version)',
      'feature gate DRADeviceTaints=false source=cluster-version (v1.35: alpha default)',
      'feature gate DRADeviceTaintRules=false source=cluster-version (v1.35: alpha default)',
    ]);
    assert.match(lines[6] ?? '', /^feature gates: cluster last read at \S+Z; \/metrics: ok; \/version: ok \(v1\.35\.2\)$/);
    assert.equal((await request(app).get('/readyz')).text, 'ok');
  });
});
