/**
 * An UPDATE refused for ever: kube-apiserver's JSON encoder escapes `<`, `>` and `&` as six bytes
 * each, so the UPDATE review of a pod whose strings are full of them (object and oldObject) is
 * about six times the pod's own size. With a body limit of two unescaped objects (7 MiB), the
 * review of a 0.7 MB pod was cut off, the validating webhook failed, and the pod could never be
 * updated again, not even to remove a finalizer. The limit now follows the largest review the
 * API server can send (src/admission/body-limits.ts), and the structure of a body beyond 7 MiB is held
 * to what such a review can have, so that the larger limit buys no larger parse.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import request from 'supertest';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { startTenancy } from '../../src/server/tenancy-policies.js';
import { createApp } from '../../src/http/app.js';
import {
  envelopeBytes,
  maxBodyBytes,
  maxEscapeExpansion,
  maxObjectBytes,
  maxStructureBytes,
  structureBytes,
} from '../../src/admission/body-limits.js';
import { createMetrics } from '../../src/http/metrics.js';
import { loadClusterStateFile } from '../../src/kube/cluster-state-file.js';
import { startReviewPool, type ReviewPool } from '../../src/server/review-pool.js';
import { goJson, largestEscapedUpdate } from '../../bench/escaped-reviews.js';
import { pipelineFromArgs, silentLogger } from '../support/harness.js';

const MiB = 1024 * 1024;
const tenancyArgs = ['--policies=policies', '--cluster-state=test/fixtures/config/tenancy-cluster.yaml'];

describe('an UPDATE refused for ever: the body limit follows the largest review the API server can send', { timeout: 120_000 }, () => {
  let pool: ReviewPool | undefined;
  after(async () => {
    await pool?.close();
  });

  it('the limit: two objects of 3 MiB, each six times as large once escaped, and 1 MiB of envelope (37 MiB)', () => {
    assert.equal(goJson('<>&').length, 3 * maxEscapeExpansion + 2, 'Go writes each of <, > and & as six bytes');
    assert.equal(maxBodyBytes, 2 * maxEscapeExpansion * maxObjectBytes + envelopeBytes);
    assert.equal(maxBodyBytes, 37 * MiB);
    assert.equal(maxStructureBytes, 7 * MiB);
  });

  it('the largest escaped UPDATE review is accepted and decided (on the main thread, without a review pool)', async () => {
    const { body } = largestEscapedUpdate();
    const app = createApp({
      pipeline: pipelineFromArgs(tenancyArgs),
      logger: silentLogger,
      metrics: createMetrics({ collectProcessMetrics: false }),
      readiness: { check: () => ({ ready: true, reasons: [] }) },
      now: () => performance.now(),
    });
    const res = await request(app).post('/validate').set('Content-Type', 'application/json').send(body);
    assert.equal(res.status, 200, res.text.slice(0, 300));
    assert.equal((res.body as { response: { allowed: boolean } }).response.allowed, true);
  });

  it('the largest escaped UPDATE review is accepted and decided, in a review worker with its heap limit', async () => {
    const { body, objectBytes } = largestEscapedUpdate();
    assert.ok(
      objectBytes <= maxObjectBytes && objectBytes > maxObjectBytes - 64 * 1024,
      `each object ${objectBytes} bytes as the client wrote it`,
    );
    const size = Buffer.byteLength(body);
    assert.ok(size > 35 * MiB && size <= maxBodyBytes, `the review is ${(size / MiB).toFixed(1)} MiB`);
    const settings = readAdmissionSettings(parseFlags(tenancyArgs, admissionFlags));
    const tenancy = startTenancy(settings.policiesDir, silentLogger, undefined, false);
    pool = await startReviewPool({
      workers: 1,
      heapMib: 160,
      settings,
      clusterFacts: loadClusterStateFile('test/fixtures/config/tenancy-cluster.yaml', silentLogger),
      policies: tenancy.current,
      gates: () => settings.gates,
      logger: silentLogger,
      now: () => performance.now(),
    });
    const app = createApp({
      pipeline: pipelineFromArgs(tenancyArgs),
      logger: silentLogger,
      metrics: createMetrics({ collectProcessMetrics: false }),
      readiness: { check: () => ({ ready: true, reasons: [] }) },
      now: () => performance.now(),
      offload: pool,
    });
    const res = await request(app).post('/validate?timeout=30s').set('Content-Type', 'application/json').send(body);
    assert.equal(res.status, 200, res.text.slice(0, 300));
    const answer = res.body as { response: { allowed: boolean; uid: string } };
    assert.equal(answer.response.allowed, true);
    assert.equal(answer.response.uid, '7c9e6679-7425-40de-944b-e07fc1f90041');
    assert.equal(pool.stats().started, 1, 'decided by the worker it started with: its heap was enough');
  });

  it('a body over 7 MiB with more than 7 MiB outside its strings → 413 before it is parsed: escaping explains size, not structure', async () => {
    const metrics = createMetrics({ collectProcessMetrics: false });
    const app = createApp({
      pipeline: pipelineFromArgs([]),
      logger: silentLogger,
      metrics,
      readiness: { check: () => ({ ready: true, reasons: [] }) },
      now: () => 0,
    });
    // Two and a half million empty tolerations: 8 MiB of `{},`, some fifty bytes a piece once parsed.
    const tolerations = `[${'{},'.repeat(Math.ceil((8 * MiB) / 3))}{}]`;
    const body = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":{"spec":{"tolerations":${tolerations}}}}}`;
    const res = await request(app).post('/mutate').set('Content-Type', 'application/json').send(body);
    assert.equal(res.status, 413);
    assert.match((JSON.parse(res.text) as { message: string }).message, /more than 7 MiB outside JSON strings/);
  });

  it('the structure scan counts only bytes outside strings, escaped quotes included, and stops once past its limit', () => {
    const text = Buffer.from(String.raw`{"a":"x\"y,}","b":[1,2]}`);
    // Outside strings: { : , : [ 1 , 2 ] } = 10 bytes.
    assert.equal(structureBytes(text, 100), 10);
    assert.equal(structureBytes(text, 3), 4, 'stops at the first byte past the limit');
    const escaped = Buffer.from(goJson({ v: '<'.repeat(1000) }));
    assert.equal(structureBytes(escaped, 100), 3, 'six-byte escapes are string content');
  });
});
