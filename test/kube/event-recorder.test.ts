import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EventIntent } from '../../src/events/event-intents.js';
import { createMetrics, type Metrics } from '../../src/http/metrics.js';
import type { ApiRequest, ApiResponse } from '../../src/kube/api-requests.js';
import { createEventRecorder, eventPace } from '../../src/kube/event-recorder.js';

function denial(name: string, namespace = 'team-a'): EventIntent {
  return {
    regarding: { apiVersion: 'apps/v1', kind: 'Deployment', namespace, name, uid: `uid-${name}` },
    type: 'Warning',
    reason: 'PolicyViolation',
    action: 'Denied',
    note: `deployments.apps "${name}" is forbidden: no`,
    reportingController: 'tolerator.dev/admission',
  };
}

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
}

/** An API server that records each request and answers `status`, or holds every answer until released. */
function fakeApi(status = 201): { request: ApiRequest; sent: Sent[]; hold: () => void; release: () => void } {
  const sent: Sent[] = [];
  let held: (() => void)[] | undefined;
  const request: ApiRequest = (method, path, body) => {
    sent.push({ method, path, body });
    const answer: ApiResponse = { status, body: status >= 400 ? { kind: 'Status', message: 'events.events.k8s.io is forbidden' } : {} };
    if (held === undefined) return Promise.resolve(answer);
    const waiting = held;
    return new Promise((resolve) => {
      waiting.push(() => {
        resolve(answer);
      });
    });
  };
  return {
    request,
    sent,
    hold: () => {
      held = [];
    },
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const resolve of waiting) resolve();
    },
  };
}

function counted(metrics: Metrics, outcome: string, source = 'admission'): Promise<number> {
  return metrics.events
    .get()
    .then(({ values }) => values.find((v) => v.labels.outcome === outcome && v.labels.source === source)?.value ?? 0);
}

const fast = { writesPerSecond: 1_000_000 };
const warnings = (): { lines: unknown[]; warn: (obj: unknown) => void } => {
  const lines: unknown[] = [];
  return { lines, warn: (obj: unknown) => lines.push(obj) };
};

describe('the Event writer', () => {
  it('writes one events.k8s.io/v1 Event with every field the API server requires, after record() has returned', async () => {
    const api = fakeApi();
    const metrics = createMetrics({ collectProcessMetrics: false });
    const recorder = createEventRecorder({
      request: api.request,
      reportingInstance: 'tolerator-host-1',
      metrics,
      logger: warnings(),
      now: () => Date.UTC(2026, 11, 3, 7, 0, 0, 123),
      pace: fast,
    });
    assert.equal(recorder.record(denial('web'), 'admission'), true);
    assert.equal(api.sent.length, 0, 'nothing is written before record() returns');
    await recorder.idle();
    assert.equal(api.sent.length, 1);
    const [write] = api.sent;
    assert.equal(write?.method, 'POST');
    assert.equal(write.path, '/apis/events.k8s.io/v1/namespaces/team-a/events');
    const body = write.body as Record<string, unknown> & { metadata: { name: string; namespace: string } };
    assert.match(body.metadata.name, /^web\.[0-9a-f]+$/);
    assert.deepEqual(
      { ...body, metadata: { namespace: body.metadata.namespace } },
      {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { namespace: 'team-a' },
        eventTime: '2026-12-03T07:00:00.123000Z',
        reportingController: 'tolerator.dev/admission',
        reportingInstance: 'tolerator-host-1',
        action: 'Denied',
        reason: 'PolicyViolation',
        regarding: denial('web').regarding,
        note: 'deployments.apps "web" is forbidden: no',
        type: 'Warning',
      },
    );
    assert.equal(await counted(metrics, 'written'), 1);
    await recorder.stop();
  });

  it('an Event about a cluster-scoped object (a Node) goes to the default namespace', async () => {
    const api = fakeApi();
    const recorder = createEventRecorder({
      request: api.request,
      reportingInstance: 'i',
      metrics: createMetrics({ collectProcessMetrics: false }),
      logger: warnings(),
      pace: fast,
    });
    recorder.record({ ...denial('gpu-1'), regarding: { apiVersion: 'v1', kind: 'Node', name: 'gpu-1' } }, 'audit');
    await recorder.idle();
    assert.equal(api.sent[0]?.path, '/apis/events.k8s.io/v1/namespaces/default/events');
    await recorder.stop();
  });

  it('repeats become a series: three denials of one Deployment are one create and one series patch with the count so far', async () => {
    const api = fakeApi();
    const metrics = createMetrics({ collectProcessMetrics: false });
    const recorder = createEventRecorder({ request: api.request, reportingInstance: 'i', metrics, logger: warnings(), pace: fast });
    for (let i = 0; i < 3; i++) recorder.record(denial('web'), 'admission');
    await recorder.idle();
    assert.deepEqual(
      api.sent.map((s) => s.method),
      ['POST', 'PATCH'],
    );
    const name = (api.sent[0]?.body as { metadata: { name: string } }).metadata.name;
    assert.equal(api.sent[1]?.path, `/apis/events.k8s.io/v1/namespaces/team-a/events/${name}`);
    // Written after all three were recorded: the patch carries the count at the time it is sent.
    assert.equal((api.sent[1].body as { series: { count: number } }).series.count, 3);
    assert.equal(await counted(metrics, 'repeated'), 2);
    await recorder.stop();
  });

  it('a tenant that gets 4n Deployments denied while the API server is slow: the queue holds at most its share, the rest is dropped and counted, and record() never waits', async () => {
    const results = [];
    for (const n of [2_500, 10_000]) {
      const api = fakeApi();
      api.hold();
      const metrics = createMetrics({ collectProcessMetrics: false });
      const recorder = createEventRecorder({ request: api.request, reportingInstance: 'i', metrics, logger: warnings(), pace: fast });
      let accepted = 0;
      for (let i = 0; i < n; i++) if (recorder.record(denial(`web-${i}`), 'admission')) accepted += 1;
      // Nothing written yet (the writer starts on a later turn), the namespace's share queued.
      results.push({ accepted, sent: api.sent.length, dropped: await counted(metrics, 'dropped') });
      api.release();
      await recorder.idle();
      results.push({ written: api.sent.length });
      await recorder.stop();
    }
    const share = eventPace.queuePerNamespace;
    assert.deepEqual(results, [
      { accepted: share, sent: 0, dropped: 2_500 - share },
      { written: share },
      { accepted: share, sent: 0, dropped: 10_000 - share },
      { written: share },
    ]);
  });

  it('a write the API server refuses is counted, and logged at most once a minute however many fail', async () => {
    const api = fakeApi(403);
    const metrics = createMetrics({ collectProcessMetrics: false });
    const log = warnings();
    let clock = 0;
    const recorder = createEventRecorder({
      request: api.request,
      reportingInstance: 'i',
      metrics,
      logger: log,
      now: () => clock,
      pace: fast,
    });
    for (let i = 0; i < 50; i++) recorder.record(denial(`web-${i}`), 'admission');
    await recorder.idle();
    assert.equal(await counted(metrics, 'failed'), 50);
    assert.equal(log.lines.length, 1);
    clock += 60_000;
    recorder.record(denial('web-x'), 'admission');
    await recorder.idle();
    assert.equal(log.lines.length, 2);
    assert.equal((log.lines[1] as { failedSinceLastLog: number }).failedSinceLastLog, 50);
    await recorder.stop();
  });

  it('after stop() nothing more is taken or written', async () => {
    const api = fakeApi();
    const recorder = createEventRecorder({
      request: api.request,
      reportingInstance: 'i',
      metrics: createMetrics({ collectProcessMetrics: false }),
      logger: warnings(),
      pace: fast,
    });
    await recorder.stop();
    assert.equal(recorder.record(denial('web'), 'admission'), false);
    assert.equal(api.sent.length, 0);
  });
});
