/**
 * The webhook app hands the Event a denial produces (src/events/event-intents.ts) to `recordEvent`
 * after the answer is written, on the main thread as from a review worker, and the answer is the
 * same byte for byte whether Events are on or not.
 */
import assert from 'node:assert/strict';
import type { RequestListener } from 'node:http';
import { describe, it } from 'node:test';
import request from 'supertest';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import type { EventIntent } from '../../src/events/event-intents.js';
import { createMetrics } from '../../src/http/metrics.js';
import { loadClusterStateFile } from '../../src/kube/cluster-state-file.js';
import { startReviewPool } from '../../src/server/review-pool.js';
import { createWebhookApp } from '../../src/server/start-server.js';
import { startTenancy } from '../../src/server/tenancy-policies.js';
import { loadReviewFixture, silentLogger } from '../support/harness.js';

const fixture = loadReviewFixture('foreign-toleration-deployment-create');

function app(
  recordEvent: ((event: EventIntent) => void) | undefined,
  offload?: Parameters<typeof createWebhookApp>[0]['offload'],
): RequestListener {
  const settings = readAdmissionSettings(parseFlags(fixture.args, admissionFlags));
  return createWebhookApp({
    settings,
    clusterFacts: loadClusterStateFile(settings.clusterStateFile ?? '', silentLogger),
    policies: startTenancy(settings.policiesDir, silentLogger, undefined, false).current,
    logger: silentLogger,
    metrics: createMetrics({ collectProcessMetrics: false }),
    readiness: { check: () => ({ ready: true, reasons: [] }) },
    now: () => 0,
    recordEvent,
    ...(offload === undefined ? {} : { offload, smallBodyBytes: 0 }),
  });
}

async function post(listener: RequestListener, review: unknown): Promise<string> {
  const response = await request(listener).post('/validate').set('content-type', 'application/json').send(JSON.stringify(review));
  assert.equal(response.status, 200);
  return response.text;
}

describe('the webhook app and the Events of --emit-events', () => {
  it('a denied Deployment: recordEvent gets its Event once, and the answer is the same as without Events', async () => {
    const recorded: EventIntent[] = [];
    const withEvents = await post(
      app((event) => recorded.push(event)),
      fixture.review,
    );
    const without = await post(app(undefined), fixture.review);
    assert.equal(withEvents, without);
    assert.equal((JSON.parse(withEvents) as { response: { allowed: boolean } }).response.allowed, false);
    assert.equal(recorded.length, 1);
    assert.deepEqual(recorded[0]?.regarding, { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'gauge' });
    assert.equal(recorded[0].note, (JSON.parse(withEvents) as { response: { status: { message: string } } }).response.status.message);
  });

  it('the same denial as a dry run: denied alike, and no Event', async () => {
    const recorded: EventIntent[] = [];
    const review = structuredClone(fixture.review);
    review.request.dryRun = true;
    const answer = JSON.parse(
      await post(
        app((event) => recorded.push(event)),
        review,
      ),
    ) as { response: { allowed: boolean } };
    assert.equal(answer.response.allowed, false);
    assert.deepEqual(recorded, []);
  });

  it('decided by a review worker (a large review), the Event crosses back to the main thread with the answer', async () => {
    const settings = readAdmissionSettings(parseFlags(fixture.args, admissionFlags));
    const clusterFacts = loadClusterStateFile(settings.clusterStateFile ?? '', silentLogger);
    const tenancy = startTenancy(settings.policiesDir, silentLogger, undefined, false);
    const pool = await startReviewPool({
      workers: 1,
      heapMib: 160,
      settings,
      clusterFacts,
      policies: tenancy.current,
      gates: () => settings.gates,
      serverVersion: () => undefined,
      logger: silentLogger,
      now: () => performance.now(),
    });
    try {
      const recorded: EventIntent[] = [];
      await post(
        app((event) => recorded.push(event), pool),
        fixture.review,
      );
      assert.equal(recorded.length, 1);
      assert.equal(recorded[0]?.regarding.name, 'gauge');
    } finally {
      await pool.close();
    }
  });
});
