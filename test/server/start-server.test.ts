/** The composition root in-process (src/server/start-server.ts): what `tolerator serve` runs, started and stopped by a test. */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:https';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { parseFlags } from '../../src/cli/flags.js';
import { startServer } from '../../src/server/start-server.js';
import { loadReviewFixture } from '../support/harness.js';

function call(port: number, path: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        agent: new Agent({ rejectUnauthorized: false }),
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: text });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('startServer', () => {
  it('serves reviews on the port it reports, is ready without a cluster, and stop() fails readiness and closes the listener', async () => {
    const server = await startServer({
      settings: readAdmissionSettings(parseFlags([], admissionFlags)),
      logger: pino({ level: 'silent' }),
      port: 0,
      host: '127.0.0.1',
      env: {},
      featureGateRefreshMs: 0,
      reviewWorkers: 0,
      collectProcessMetrics: false,
    });
    await server.ready();
    assert.equal((await call(server.port, '/readyz')).status, 200);
    const review = loadReviewFixture('burstable-create-no-tolerations').review;
    const answer = await call(server.port, '/mutate', JSON.stringify(review));
    assert.equal(answer.status, 200);
    const response = (JSON.parse(answer.body) as { response: { uid: string; allowed: boolean; patchType?: string } }).response;
    assert.deepEqual([response.uid, response.allowed, response.patchType], [review.request.uid, true, 'JSONPatch']);
    await server.stop();
    await assert.rejects(call(server.port, '/readyz'), /ECONNREFUSED/);
  });

  it('--emit-events without a cluster is a usage error, before anything serves', async () => {
    await assert.rejects(
      startServer({
        settings: readAdmissionSettings(parseFlags([], admissionFlags)),
        logger: pino({ level: 'silent' }),
        port: 0,
        host: '127.0.0.1',
        env: {},
        featureGateRefreshMs: 0,
        reviewWorkers: 0,
        collectProcessMetrics: false,
        emitEvents: true,
      }),
      { name: 'UsageError', message: '--emit-events needs a cluster: --kubeconfig, or an in-cluster service account' },
    );
  });
});
