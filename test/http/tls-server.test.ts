/**
 * The server over real TLS: a certificate chain checked as kube-apiserver checks it, and the
 * serving certificate swapped under a running server the way the kubelet updates a Secret volume.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { createMetrics } from '../../src/http/metrics.js';
import { startTlsServer, type TlsServer } from '../../src/http/tls-server.js';
import { checkServerIdentityAsGo, createCA, createServingCertificate, type Pair } from '../support/certificates.js';
import { appFromArgs, loadReviewFixture, silentLogger } from '../support/harness.js';

const serviceName = 'tolerator.tolerator-system.svc';

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly fingerprint: string;
}

/** One request on a new connection, verified against `ca` with Go's host rules. */
function call(port: number, ca: string, path: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: body === undefined ? 'GET' : 'POST',
        servername: serviceName,
        ca,
        agent: false,
        checkServerIdentity: checkServerIdentityAsGo,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        timeout: 10_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const fingerprint = res.socket instanceof TLSSocket ? res.socket.getPeerCertificate().fingerprint256 : '';
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), fingerprint });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

async function waitFor(condition: () => Promise<boolean>, what: string, deadlineMs = 15_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

function fingerprintOf(pair: Pair): string {
  return new X509Certificate(pair.cert).fingerprint256;
}

describe('TLS as kube-apiserver sees it', () => {
  let ca: Pair;
  let server: TlsServer;

  before(async () => {
    ca = await createCA();
    const serving = await createServingCertificate(ca, [serviceName, `${serviceName}.cluster.local`]);
    server = await startTlsServer({
      app: appFromArgs([]),
      port: 0,
      host: '127.0.0.1',
      certificate: serving,
      logger: silentLogger,
      metrics: createMetrics({ collectProcessMetrics: false }),
    });
  });
  after(async () => {
    await server.close(1000);
  });

  it('a certificate whose SAN names the service verifies against the CA bundle', async () => {
    const answer = await call(server.address().port, ca.cert, '/healthz');
    assert.equal(answer.status, 200);
    assert.equal(answer.body, 'ok');
  });

  it('a review over TLS comes back with its uid', async () => {
    const fixture = loadReviewFixture('burstable-create-defaults-present');
    const answer = await call(server.address().port, ca.cert, '/mutate', JSON.stringify(fixture.review));
    assert.equal(answer.status, 200);
    assert.equal((JSON.parse(answer.body) as { response: { uid: string } }).response.uid, fixture.review.request.uid);
  });

  it('another CA does not verify the server', async () => {
    const other = await createCA('someone-else');
    await assert.rejects(call(server.address().port, other.cert, '/healthz'), /self-signed|unable to verify|certificate/);
  });

  it('a certificate with the name only in its Common Name is refused, as Go refuses it', async () => {
    const cnOnly = await createServingCertificate(ca, [], serviceName);
    const legacy = await startTlsServer({
      app: appFromArgs([]),
      port: 0,
      host: '127.0.0.1',
      certificate: cnOnly,
      logger: silentLogger,
      metrics: createMetrics({ collectProcessMetrics: false }),
    });
    try {
      await assert.rejects(call(legacy.address().port, ca.cert, '/healthz'), /legacy Common Name/);
    } finally {
      await legacy.close(1000);
    }
  });
});

describe('serving certificate reload', () => {
  let ca: Pair;
  let dir: string;
  let first: Pair;
  let second: Pair;
  let server: TlsServer;
  const metrics = createMetrics({ collectProcessMetrics: false });

  /** The kubelet's atomic writer: files in a timestamped directory, `..data` swapped by rename. */
  function writeSecretVolume(pair: Pair, generation: number): void {
    const data = join(dir, `..2026_11_30_0${generation}`);
    mkdirSync(data);
    writeFileSync(join(data, 'tls.crt'), pair.cert);
    writeFileSync(join(data, 'tls.key'), pair.key);
    symlinkSync(`..2026_11_30_0${generation}`, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  }

  before(async () => {
    ca = await createCA();
    first = await createServingCertificate(ca, [serviceName]);
    second = await createServingCertificate(ca, [serviceName]);
    dir = mkdtempSync(join(tmpdir(), 'tolerator-tls-'));
    writeSecretVolume(first, 1);
    symlinkSync('..data/tls.crt', join(dir, 'tls.crt'));
    symlinkSync('..data/tls.key', join(dir, 'tls.key'));
    server = await startTlsServer({
      app: appFromArgs([]),
      port: 0,
      host: '127.0.0.1',
      certificate: first,
      certificateFiles: { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') },
      logger: silentLogger,
      metrics,
      pollIntervalMs: 200,
    });
  });
  after(async () => {
    await server.close(1000);
    rmSync(dir, { recursive: true, force: true });
  });

  it('new connections get the new certificate and no request fails during the swap', async () => {
    const port = server.address().port;
    assert.equal((await call(port, ca.cert, '/healthz')).fingerprint, fingerprintOf(first));
    const swap = { done: false };
    const answers: Answer[] = [];
    const stream = (async () => {
      // Requests keep coming, each on a new connection, until the new certificate is seen (bounded).
      for (let i = 0; i < 2000 && !(swap.done && answers.at(-1)?.fingerprint === fingerprintOf(second)); i++) {
        answers.push(await call(port, ca.cert, '/healthz'));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 100));
    writeSecretVolume(second, 2);
    swap.done = true;
    await stream;
    assert.ok(
      answers.every((answer) => answer.status === 200),
      'every request during the swap succeeded',
    );
    assert.equal(answers.at(-1)?.fingerprint, fingerprintOf(second));
    const expiry = await metrics.registry.getSingleMetricAsString('tolerator_certificate_expiry_timestamp_seconds');
    assert.match(expiry, /tolerator_certificate_expiry_timestamp_seconds \d+/);
    assert.match(await metrics.registry.getSingleMetricAsString('tolerator_certificate_reloads_total'), /result="success"} [1-9]/);
  });

  it('a pair whose key does not match keeps the old certificate serving', async () => {
    const stranger = await createServingCertificate(ca, [serviceName]);
    writeSecretVolume({ cert: stranger.cert, key: first.key }, 3);
    await waitFor(
      async () => /result="failure"} [1-9]/.test(await metrics.registry.getSingleMetricAsString('tolerator_certificate_reloads_total')),
      'a failed reload to be counted',
    );
    const answer = await call(server.address().port, ca.cert, '/healthz');
    assert.equal(answer.status, 200);
    assert.equal(answer.fingerprint, fingerprintOf(second));
  });
});
