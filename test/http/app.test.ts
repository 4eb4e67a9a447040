/** The express app's own routes: health, readiness, metrics, and the one error handler. */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import request from 'supertest';
import { createApp } from '../../src/http/app.js';
import { createMetrics } from '../../src/http/metrics.js';
import { loadReviewFixture, pipelineFromArgs, silentLogger } from '../support/harness.js';

function appWith(readiness: () => { ready: boolean; reasons: readonly string[] }, pipeline = pipelineFromArgs([])) {
  const metrics = createMetrics({ collectProcessMetrics: false, cacheSyncState: () => ({ namespaces: true, nodes: false }) });
  return { app: createApp({ pipeline, logger: silentLogger, metrics, readiness: { check: readiness }, now: () => 0 }), metrics };
}

describe('the express app', () => {
  it('/healthz answers ok while the process lives, ready or not', async () => {
    const { app } = appWith(() => ({ ready: false, reasons: ['namespace and node caches have not synced'] }));
    const res = await request(app).get('/healthz');
    assert.equal(res.status, 200);
    assert.equal(res.text, 'ok');
  });

  it('/readyz is 503 with the reasons until the caches have synced', async () => {
    const { app } = appWith(() => ({ ready: false, reasons: ['namespace and node caches have not synced'] }));
    const res = await request(app).get('/readyz');
    assert.equal(res.status, 503);
    assert.equal(res.text, 'not ready: namespace and node caches have not synced');
  });

  it('/readyz is 200 once ready', async () => {
    const { app } = appWith(() => ({ ready: true, reasons: [] }));
    assert.equal((await request(app).get('/readyz')).status, 200);
  });

  it('/metrics counts each review by webhook, operation, plugin and decision, and shows cache sync per resource', async () => {
    const { app } = appWith(() => ({ ready: true, reasons: [] }));
    const review = loadReviewFixture('gt-gate-off-create').review;
    await request(app).post('/validate').set('Content-Type', 'application/json').send(JSON.stringify(review));
    const res = await request(app).get('/metrics');
    assert.match(
      res.text,
      /tolerator_admission_reviews_total\{webhook="validate",operation="CREATE",plugin="TolerationValidation",decision="denied"\} 1/,
    );
    assert.match(res.text, /tolerator_admission_review_duration_seconds_count\{webhook="validate"\} 1/);
    assert.match(res.text, /tolerator_cache_synced\{resource="namespaces"\} 1/);
    assert.match(res.text, /tolerator_cache_synced\{resource="nodes"\} 0/);
  });

  it('a plugin that throws is "could not decide": 500 with a generic message, never the error text or a denial', async () => {
    const throwing = { review: () => Promise.reject(new Error('secret detail from a broken policy')) };
    const { app, metrics } = appWith(() => ({ ready: true, reasons: [] }), throwing);
    const review = loadReviewFixture('burstable-create-defaults-present').review;
    const res = await request(app).post('/mutate').set('Content-Type', 'application/json').send(JSON.stringify(review));
    assert.equal(res.status, 500);
    assert.deepEqual(JSON.parse(res.text), {
      apiVersion: 'v1',
      kind: 'Status',
      metadata: {},
      status: 'Failure',
      message: 'internal error: the webhook could not decide; see its log',
      reason: 'InternalError',
      code: 500,
    });
    assert.doesNotMatch(res.text, /secret detail/);
    assert.doesNotMatch(await metrics.registry.getSingleMetricAsString('tolerator_rejected_requests_total'), /code="500"/);
    assert.match(
      await metrics.registry.getSingleMetricAsString('tolerator_undecided_reviews_total'),
      /tolerator_undecided_reviews_total 1/,
    );
  });

  it('a client that goes away in the middle of a body is settled as cut short, and the server keeps answering', async () => {
    const { app, metrics } = appWith(() => ({ ready: true, reasons: [] }));
    const server = createServer(app);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as { port: number };
      const socket = connect(port, '127.0.0.1');
      await once(socket, 'connect');
      socket.write('POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"kind":');
      await new Promise((resolve) => setTimeout(resolve, 50));
      socket.destroy();
      const deadline = Date.now() + 10_000;
      while (!/code="400"} 1/.test(await metrics.registry.getSingleMetricAsString('tolerator_rejected_requests_total'))) {
        assert.ok(Date.now() < deadline, 'the cut-short request was never settled');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.equal((await request(server).get('/healthz')).status, 200);
    } finally {
      server.close();
    }
  });
});
