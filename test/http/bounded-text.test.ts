/**
 * Every log line and every answer is bounded, whatever the review holds (docs/operations.md,
 * "Bounds"): a review is written by whoever reaches the port, and its uid, name, namespace or
 * operation may be megabytes long. A megabyte log line makes the kubelet rotate the log (and
 * containerd splits it into partial lines of 16 KiB), a megabyte refusal goes into the API
 * server's error and audit log. Asserted on the lines the server's own logger format writes.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import request from 'supertest';
import { emptyClusterFacts } from '../../src/admission/cluster-facts.js';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { startTenancy } from '../../src/server/tenancy-policies.js';
import { logFormat, maxLogLineBytes } from '../../src/http/log-format.js';
import { createMetrics } from '../../src/http/metrics.js';
import { createWebhookApp } from '../../src/server/start-server.js';
import { loadReviewFixture, silentLogger } from '../support/harness.js';

/** A logger in the server's format whose lines the test reads. */
function capturingLogger(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((line) => line !== ''),
      );
      done();
    },
  });
  return { logger: pino({ ...logFormat, level: 'info' }, stream), lines };
}

function appWithLog(): { app: ReturnType<typeof createWebhookApp>; lines: string[] } {
  const settings = readAdmissionSettings(parseFlags([], admissionFlags));
  const { logger, lines } = capturingLogger();
  const app = createWebhookApp({
    settings,
    clusterFacts: emptyClusterFacts,
    policies: startTenancy(settings.policiesDir, silentLogger, undefined, false).current,
    logger,
    metrics: createMetrics({ collectProcessMetrics: false }),
    readiness: { check: () => ({ ready: true, reasons: [] }) },
    now: () => 0,
  });
  return { app, lines };
}

function review(change: (request: Record<string, unknown>) => void): string {
  const body = loadReviewFixture('burstable-create-defaults-present').review;
  change(body.request);
  return JSON.stringify(body);
}

const megabyte = 1024 * 1024;
/** The most text any answer holds (docs/plugins.md): 64 KiB. */
const maxAnswerBytes = 64 * 1024;

/** Lets the asynchronous log destination flush. */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function assertBoundedLines(lines: readonly string[]): void {
  assert.ok(lines.length > 0, 'something was logged');
  for (const line of lines) {
    assert.ok(Buffer.byteLength(line) <= maxLogLineBytes, `a log line of ${Buffer.byteLength(line)} bytes`);
    assert.doesNotThrow(() => JSON.parse(line), 'each line stays one JSON object');
  }
}

describe('unbounded log lines: every line at most maxLogLineBytes', () => {
  for (const field of ['name', 'namespace'] as const) {
    it(`unbounded log lines: a megabyte-long ${field} is decided, and its log line is clipped`, async () => {
      const { app, lines } = appWithLog();
      const response = await request(app)
        .post('/mutate')
        .set('content-type', 'application/json')
        .send(review((req) => (req[field] = 'n'.repeat(megabyte))));
      await settled();
      assert.equal(response.status, 200);
      assert.ok(response.text.length <= maxAnswerBytes, `an answer of ${response.text.length} bytes`);
      assertBoundedLines(lines);
      const line = JSON.parse(lines.find((text) => text.includes('admission review')) ?? '{}') as Record<string, string>;
      assert.match(line[field] ?? '', /^n{1024}…\(\d+ more characters\)$/, 'the field is clipped, and says how much was left out');
    });
  }

  it('unbounded log lines: a megabyte-long uid is refused with a short answer and a short line', async () => {
    const { app, lines } = appWithLog();
    const response = await request(app)
      .post('/mutate')
      .set('content-type', 'application/json')
      .send(review((req) => (req.uid = 'u'.repeat(megabyte))));
    await settled();
    assert.equal(response.status, 400);
    assert.match((response.body as { message: string }).message, /request\.uid is 1048576 characters long; at most 256/);
    assert.ok(response.text.length <= 4 * 1024, `an answer of ${response.text.length} bytes`);
    assertBoundedLines(lines);
  });

  it('unbounded log lines: whatever a line is given, the logger writes at most maxLogLineBytes, as JSON, at its level', async () => {
    const { logger, lines } = capturingLogger();
    logger.error({ err: new Error('x'.repeat(3 * megabyte)), field: 'y'.repeat(megabyte) }, 'a line built to be long');
    await settled();
    assertBoundedLines(lines);
    const line = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
    assert.equal(line.level, 'error');
    assert.match(String(line.msg), /a log line of \d+ bytes, clipped/);
  });
});

describe('a refusal that echoes the request: every refusal bounded', () => {
  it('a refusal that echoes the request: a 3-million-character operation gets a short 400 and a short log line', async () => {
    const { app, lines } = appWithLog();
    const response = await request(app)
      .post('/validate')
      .set('content-type', 'application/json')
      .send(review((req) => (req.operation = 'X'.repeat(3_000_000))));
    await settled();
    assert.equal(response.status, 400);
    assert.match(
      (response.body as { message: string }).message,
      /request\.operation: unsupported value "X{1024}…\(2998976 more characters\)"/,
    );
    assert.ok(response.text.length <= 4 * 1024, `an answer of ${response.text.length} bytes`);
    assertBoundedLines(lines);
  });

  it('a refusal that echoes the request: a long kind or apiVersion is quoted clipped', async () => {
    const { app } = appWithLog();
    for (const body of [
      { kind: 'K'.repeat(megabyte), apiVersion: 'admission.k8s.io/v1' },
      { kind: 'AdmissionReview', apiVersion: 'v'.repeat(megabyte) },
    ]) {
      const response = await request(app).post('/validate').set('content-type', 'application/json').send(JSON.stringify(body));
      assert.equal(response.status, 400);
      assert.ok(response.text.length <= 4 * 1024, `an answer of ${response.text.length} bytes`);
    }
  });
});
