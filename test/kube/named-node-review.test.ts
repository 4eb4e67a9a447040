/**
 * The node a pod's `spec.nodeName` names, judged in server mode: the informer cache may not hold it
 * yet (a node that registered a moment ago, or during a watch outage), so the pipeline reads it
 * from the API server before DedicatedNodes decides. Reviews go through the real app (HTTP
 * status and AdmissionReview as kube-apiserver receives them) against a fake API server.
 */
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import request from 'supertest';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { pipelineFor } from '../../src/admission/pipeline-settings.js';
import { startTenancy } from '../../src/server/tenancy-policies.js';
import { createApp } from '../../src/http/app.js';
import { createMetrics } from '../../src/http/metrics.js';
import { startInformers } from '../../src/kube/informers.js';
import { loadReviewFixture, silentLogger } from '../support/harness.js';
import { FakeApiServer } from '../support/fake-api-server.js';

interface WireResponse {
  response: { uid: string; allowed: boolean; status?: { code: number; reason: string; message: string }; warnings?: string[] };
}

/** A fake cluster with namespace "shop" (no group) and "ml" (group gpu), and an app in front of informers on it. */
async function serverMode(t: TestContext): Promise<{ fake: FakeApiServer; app: ReturnType<typeof createApp> }> {
  const fake = await FakeApiServer.start();
  fake.put('namespaces', { metadata: { name: 'shop', labels: { 'kubernetes.io/metadata.name': 'shop' } } });
  fake.put('namespaces', { metadata: { name: 'ml', labels: { 'kubernetes.io/metadata.name': 'ml', dedicated: 'gpu' } } });
  fake.put('nodes', { metadata: { name: 'worker-1', labels: {} } });
  const facts = startInformers({ kubeConfig: fake.kubeConfig(), logger: silentLogger, backoff: { initialMs: 20, maxMs: 100 } });
  t.after(async () => {
    await facts.stop();
    await fake.close();
  });
  const deadline = Date.now() + 5_000;
  while (!facts.isSynced()) {
    assert.ok(Date.now() < deadline, 'caches synced');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const settings = readAdmissionSettings(parseFlags(['--policies=policies'], admissionFlags));
  const tenancy = startTenancy(settings.policiesDir, silentLogger, undefined, false);
  const app = createApp({
    pipeline: pipelineFor(settings, facts, tenancy.current),
    logger: silentLogger,
    metrics: createMetrics({ collectProcessMetrics: false }),
    readiness: { check: () => ({ ready: true, reasons: [] }) },
    now: () => 0,
  });
  return { fake, app };
}

/** The foreign-nodename fixture (a pod in "shop" bound by spec.nodeName), pointed at `nodeName`. */
function pinnedPodReview(nodeName: string): unknown {
  const review = structuredClone(loadReviewFixture('foreign-nodename-create').review) as unknown as {
    request: { object: { spec: { nodeName: string } } };
  };
  review.request.object.spec.nodeName = nodeName;
  return review;
}

async function validate(app: ReturnType<typeof createApp>, review: unknown): Promise<{ status: number; body: WireResponse }> {
  const res = await request(app).post('/validate').set('Content-Type', 'application/json').send(JSON.stringify(review));
  return { status: res.status, body: res.body as WireResponse };
}

describe('spec.nodeName in server mode', () => {
  it("denies a pod bound to a group's node that joined after the cache was filled: the node is read from the API server", async (t) => {
    const { fake, app } = await serverMode(t);
    fake.putUnwatched('nodes', {
      metadata: { name: 'gpu-9', labels: { dedicated: 'gpu' } },
      spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
    });

    const { status, body } = await validate(app, pinnedPodReview('gpu-9'));

    assert.equal(status, 200);
    assert.equal(body.response.allowed, false);
    assert.equal(body.response.status?.code, 403);
    assert.match(body.response.status.message, /^spec\.nodeName "gpu-9" is a node of group "gpu"/);
    assert.equal(fake.count({ verb: 'get', name: 'gpu-9' }), 1);
  });

  it('denies a pod bound to a node that does not exist (403), naming the node', async (t) => {
    const { app } = await serverMode(t);

    const { status, body } = await validate(app, pinnedPodReview('ip-10-0-13-7.ec2.internal'));

    assert.equal(status, 200);
    assert.equal(body.response.allowed, false);
    assert.equal(body.response.status?.code, 403);
    assert.match(body.response.status.message, /^spec\.nodeName "ip-10-0-13-7\.ec2\.internal" names no existing node/);
  });

  it('answers 500 (the failurePolicy applies) when the API server cannot say whether the node exists, never a silent allow', async (t) => {
    const { fake, app } = await serverMode(t);
    fake.refuseGets('nodes', 503);

    const { status, body } = await validate(app, pinnedPodReview('ip-10-0-13-7.ec2.internal'));

    assert.equal(status, 500);
    assert.notEqual((body as Partial<WireResponse>).response?.allowed, true);
  });

  it('allows a pod bound to a shared node from the cache without asking the API server', async (t) => {
    const { fake, app } = await serverMode(t);

    const { body } = await validate(app, pinnedPodReview('worker-1'));

    assert.equal(body.response.allowed, true);
    assert.equal(fake.count({ verb: 'get', name: 'worker-1' }), 0);
  });

  it('never sends a name that cannot be a node to the API server as a path', async (t) => {
    const { fake, app } = await serverMode(t);

    const { body } = await validate(app, pinnedPodReview('..'));

    assert.equal(body.response.allowed, false);
    assert.match(body.response.status?.message ?? '', /^spec\.nodeName "\.\." names no existing node/);
    assert.equal(fake.count({ verb: 'get' }), 0);
  });
});
