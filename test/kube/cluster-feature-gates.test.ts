/**
 * readClusterFeatureGates against a fake API server: `/metrics` and `/version` read with the kube
 * client's credentials, each failure reported with why, and every read bounded (bytes, time).
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { describe, it } from 'node:test';
import { readClusterFeatureGates } from '../../src/kube/cluster-feature-gates.js';
import { featureMetricsText, versionInfo } from '../support/api-server-answers.js';
import { FakeApiServer } from '../support/fake-api-server.js';

async function fakeServer(t: TestContext): Promise<FakeApiServer> {
  const fake = await FakeApiServer.start();
  t.after(() => fake.close());
  return fake;
}

const limits = { timeoutMs: 2_000, maxMetricsBytes: 1024 * 1024 };

describe('readClusterFeatureGates', () => {
  it('reads both gates from /metrics and the version from /version', async (t) => {
    const fake = await fakeServer(t);
    fake.reportFeatureGates({ TaintTolerationComparisonOperators: true, PodLevelResources: false });
    fake.answerVersion({ kind: 'info', info: versionInfo('v1.35.2-eks-4a7b1c3') });

    const report = await readClusterFeatureGates(fake.kubeConfig(), limits);

    assert.deepEqual(Object.fromEntries(report.metrics ?? []), { TaintTolerationComparisonOperators: true, PodLevelResources: false });
    assert.equal(report.stages.get('TaintTolerationComparisonOperators'), 'ALPHA');
    assert.deepEqual(report.version, { major: 1, minor: 35 });
    assert.equal(report.gitVersion, 'v1.35.2-eks-4a7b1c3');
    assert.equal(report.metricsProblem, undefined);
    assert.equal(report.versionProblem, undefined);
  });

  it("sends the kubeconfig's credentials, as the informers do", async (t) => {
    const fake = await fakeServer(t);
    fake.requireMetricsToken('s3cret');

    const report = await readClusterFeatureGates(fake.kubeConfig('s3cret'), limits);

    assert.equal(report.metrics?.get('PodLevelResources'), true);
    assert.deepEqual(
      fake.nonResourceRequests.map((request) => request.authorization),
      ['Bearer s3cret', 'Bearer s3cret'],
    );
  });

  it('reports a 403 on /metrics (no RBAC grant) and still reads /version', async (t) => {
    const fake = await fakeServer(t);
    fake.requireMetricsToken('s3cret');

    const report = await readClusterFeatureGates(fake.kubeConfig(), limits);

    assert.equal(report.metrics, undefined);
    assert.match(report.metricsProblem ?? '', /^GET \/metrics: HTTP 403 \(does the ClusterRole grant get on this URL/);
    assert.deepEqual(report.version, { major: 1, minor: 35 });
  });

  it('reports a /metrics without the feature family, and gates absent from it', async (t) => {
    const fake = await fakeServer(t);
    fake.answerMetrics({ kind: 'text', text: '# HELP up x\n# TYPE up gauge\nup 1\n' });

    const report = await readClusterFeatureGates(fake.kubeConfig(), limits);

    assert.deepEqual(Object.fromEntries(report.metrics ?? []), {});
    assert.equal(report.metricsProblem, 'GET /metrics: no kubernetes_feature_enabled samples');
  });

  it('gives up on a /metrics body larger than the cap, without a sample from it', async (t) => {
    const fake = await fakeServer(t);
    // A body that never reaches the feature family: 2 MiB of another family, against a 1 MiB cap.
    fake.answerMetrics({
      kind: 'custom',
      write: (res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const line = 'apiserver_request_total{code="200"} 1\n'.repeat(1000);
        for (let written = 0; written < 2 * 1024 * 1024; written += line.length) res.write(line);
        res.end(featureMetricsText({ TaintTolerationComparisonOperators: true }));
      },
    });

    const report = await readClusterFeatureGates(fake.kubeConfig(), limits);

    assert.equal(report.metrics, undefined);
    assert.equal(report.metricsProblem, 'GET /metrics: the body is larger than 1048576 bytes; not read further');
    assert.deepEqual(report.version, { major: 1, minor: 35 });
  });

  it('stops reading /metrics after the feature family, however long the rest', async (t) => {
    const fake = await fakeServer(t);
    let written = 0;
    fake.answerMetrics({
      kind: 'custom',
      write: (res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write(featureMetricsText({ TaintTolerationComparisonOperators: true }));
        // Then 10 MiB more, far beyond the cap, written as the client drains it.
        const more = Buffer.alloc(64 * 1024, 'process_x 1\n');
        const next = (): void => {
          while (written < 10 * 1024 * 1024 && !res.destroyed) {
            written += more.length;
            if (!res.write(more)) {
              res.once('drain', next);
              return;
            }
          }
          if (!res.destroyed) res.end();
        };
        next();
      },
    });

    const report = await readClusterFeatureGates(fake.kubeConfig(), limits);

    assert.equal(report.metrics?.get('TaintTolerationComparisonOperators'), true);
    assert.equal(report.metricsProblem, undefined);
    assert.ok(written < 10 * 1024 * 1024, `stopped early (${written} bytes written)`);
  });

  it('reports a garbage /version and a refused one', async (t) => {
    const fake = await fakeServer(t);
    fake.answerVersion({ kind: 'info', info: { gitVersion: 'banana' } });
    assert.equal(
      (await readClusterFeatureGates(fake.kubeConfig(), limits)).versionProblem,
      'GET /version: no major.minor version in the answer',
    );
    fake.answerVersion({ kind: 'status', code: 500 });
    const refused = await readClusterFeatureGates(fake.kubeConfig(), limits);
    assert.equal(refused.version, undefined);
    assert.equal(refused.versionProblem, 'GET /version: HTTP 500');
  });

  it('gives up on a server that never finishes its answer, within the deadline', async (t) => {
    const fake = await fakeServer(t);
    fake.answerMetrics({
      kind: 'custom',
      write: (res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('apiserver_request_total 1\n');
      },
    });

    const started = Date.now();
    const report = await readClusterFeatureGates(fake.kubeConfig(), { ...limits, timeoutMs: 300 });

    assert.equal(report.metrics, undefined);
    assert.equal(report.metricsProblem, 'GET /metrics: no complete answer within 300 ms');
    assert.ok(Date.now() - started < 5_000);
  });

  it('reports an API server that cannot be reached, for both parts', async () => {
    const fake = await FakeApiServer.start();
    const kubeConfig = fake.kubeConfig();
    await fake.close();

    const report = await readClusterFeatureGates(kubeConfig, limits);

    assert.equal(report.metrics, undefined);
    assert.equal(report.version, undefined);
    assert.match(report.metricsProblem ?? '', /^GET \/metrics: .*ECONNREFUSED/);
    assert.match(report.versionProblem ?? '', /^GET \/version: .*ECONNREFUSED/);
  });
});
