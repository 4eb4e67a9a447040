/**
 * `--client-ca-file` over real TLS: the API server's client certificate is answered, anything else
 * is refused 401 on the review endpoints while the probes and /metrics stay open; the CA file is
 * reloaded the way the kubelet updates a Secret volume; a bad file stops the server from starting.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { connect as tcpConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { parseClientCaBundle } from '../../src/http/client-ca.js';
import { createMetrics, type Metrics } from '../../src/http/metrics.js';
import { startTlsServer, type TlsServer } from '../../src/http/tls-server.js';
import {
  checkServerIdentityAsGo,
  createCA,
  createClientCertificate,
  createServingCertificate,
  type Pair,
} from '../support/certificates.js';
import { appFromArgs, loadReviewFixture, silentLogger } from '../support/harness.js';
import { spawnServe } from '../support/serve-process.js';

const serviceName = 'tolerator.tolerator-system.svc';

const noCertificateMessage =
  'client certificate required: this webhook answers only clients with a certificate signed by a CA of its --client-ca-file';
const untrusted = (verifyError: string): string =>
  `client certificate not accepted (${verifyError}): it must be valid and signed by a CA of the webhook's --client-ca-file`;

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly connection: string | undefined;
  /** Whether the TLS session was resumed rather than negotiated anew. */
  readonly resumed: boolean;
  readonly socket: TLSSocket;
}

interface CallOptions {
  readonly client?: Pair;
  readonly body?: string;
  /** A shared agent (keep-alive, session cache); otherwise one fresh connection per call. */
  readonly agent?: Agent;
  /** A TCP connection already open, to run the TLS handshake over. */
  readonly tcp?: Socket;
}

/** One request as kube-apiserver makes it: the serving certificate checked against `serverCa` with Go's rules. */
function call(port: number, serverCa: string, path: string, options: CallOptions = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.body === undefined ? 'GET' : 'POST',
        servername: serviceName,
        ca: serverCa,
        checkServerIdentity: checkServerIdentityAsGo,
        ...(options.client === undefined ? {} : { cert: options.client.cert, key: options.client.key }),
        ...(options.tcp === undefined ? {} : { socket: options.tcp }),
        agent: options.agent ?? false,
        headers: {
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
          // Without an agent Node asks for the connection to close; over a given connection the
          // test wants to see whether the server closes it.
          ...(options.tcp === undefined ? {} : { connection: 'keep-alive' }),
        },
        timeout: 10_000,
      },
      (res) => {
        // Read now: the socket is detached from the response once it ends.
        const socket = res.socket;
        assert.ok(socket instanceof TLSSocket);
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            connection: res.headers.connection,
            resumed: socket.isSessionReused(),
            socket,
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(options.body);
  });
}

function status(answer: Answer): { code: number; reason: string; message: string; kind: string } {
  return JSON.parse(answer.body) as { code: number; reason: string; message: string; kind: string };
}

async function counter(metrics: Metrics, name: string, labels: string): Promise<number> {
  const text = await metrics.registry.getSingleMetricAsString(name);
  const line = text.split('\n').find((entry) => entry.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

async function waitFor(condition: () => Promise<boolean>, what: string, deadlineMs = 15_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const review = (): string => JSON.stringify(loadReviewFixture('burstable-create-defaults-present').review);
const uidOf = (answer: Answer): string => (JSON.parse(answer.body) as { response: { uid: string } }).response.uid;

describe('--client-ca-file: who may call the webhook', () => {
  let serverCa: Pair;
  let apiServerCa: Pair;
  let apiServer: Pair;
  let server: TlsServer;
  const metrics = createMetrics({ collectProcessMetrics: false });

  before(async () => {
    serverCa = await createCA('tolerator-ca');
    apiServerCa = await createCA('webhook-client-ca');
    apiServer = await createClientCertificate(apiServerCa);
    server = await startTlsServer({
      app: appFromArgs([], metrics),
      port: 0,
      host: '127.0.0.1',
      certificate: await createServingCertificate(serverCa, [serviceName]),
      clientCa: { bundle: parseClientCaBundle(apiServerCa.cert) },
      logger: silentLogger,
      metrics,
    });
  });
  after(async () => {
    await server.close(1000);
  });

  it("answers the API server's client certificate on /mutate and /validate, and keeps its connection open", async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const answers: Answer[] = [];
      for (const path of ['/mutate', '/validate']) {
        const answer = await call(server.address().port, serverCa.cert, `${path}?timeout=5s`, { client: apiServer, body: review(), agent });
        assert.equal(answer.status, 200, `${path}: ${answer.body}`);
        assert.equal(uidOf(answer), loadReviewFixture('burstable-create-defaults-present').review.request.uid);
        assert.equal(answer.connection, 'keep-alive', `${path}: keep-alive is not cut for a trusted client`);
        answers.push(answer);
      }
      assert.equal(answers[0]?.socket, answers[1]?.socket, 'both reviews went over one connection');
    } finally {
      agent.destroy();
    }
  });

  it('refuses a client without a certificate on /mutate and /validate: 401, a Status saying why, connection closed', async () => {
    const before = await counter(metrics, 'tolerator_unauthenticated_requests_total', 'reason="no_certificate"');
    for (const path of ['/mutate', '/validate']) {
      const answer = await call(server.address().port, serverCa.cert, path, { body: review() });
      assert.equal(answer.status, 401, path);
      assert.deepEqual(JSON.parse(answer.body), {
        apiVersion: 'v1',
        kind: 'Status',
        metadata: {},
        status: 'Failure',
        message: noCertificateMessage,
        reason: 'Unauthorized',
        code: 401,
      });
      assert.equal(answer.connection, 'close');
    }
    assert.equal(await counter(metrics, 'tolerator_unauthenticated_requests_total', 'reason="no_certificate"'), before + 2);
    assert.ok((await counter(metrics, 'tolerator_rejected_requests_total', 'code="401"')) >= 2);
  });

  // OpenSSL looks the issuer up by name: a CA of another name is not found at all, an impostor
  // CA of the trusted CA's name is found and its signature fails. Both are 401, never a review.
  for (const row of [
    { name: 'another name', caName: 'someone-else', verifyError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' },
    { name: "the trusted CA's name", caName: 'webhook-client-ca', verifyError: 'CERT_SIGNATURE_FAILURE' },
  ]) {
    it(`refuses a certificate from another CA (${row.name}) with 401; the TLS handshake itself succeeds`, async () => {
      const stranger = await createClientCertificate(await createCA(row.caName));
      const before = await counter(metrics, 'tolerator_unauthenticated_requests_total', 'reason="untrusted_certificate"');
      for (const path of ['/mutate', '/validate']) {
        const answer = await call(server.address().port, serverCa.cert, path, { client: stranger, body: review() });
        assert.equal(answer.status, 401, path);
        assert.equal(status(answer).message, untrusted(row.verifyError));
        assert.equal(status(answer).reason, 'Unauthorized');
        assert.equal(answer.connection, 'close');
      }
      assert.equal(await counter(metrics, 'tolerator_unauthenticated_requests_total', 'reason="untrusted_certificate"'), before + 2);
    });
  }

  it('refuses an expired certificate of the right CA, and one made for serving rather than client auth', async () => {
    const expired = await createClientCertificate(apiServerCa, 'kube-apiserver-webhook-client', {
      notBefore: new Date('2025-01-01T00:00:00Z'),
      notAfter: new Date('2026-01-01T00:00:00Z'),
    });
    const answer = await call(server.address().port, serverCa.cert, '/validate', { client: expired, body: review() });
    assert.equal(answer.status, 401);
    assert.equal(status(answer).message, untrusted('CERT_HAS_EXPIRED'));

    const servingOnly = await createServingCertificate(apiServerCa, [serviceName]);
    const wrongUsage = await call(server.address().port, serverCa.cert, '/validate', { client: servingOnly, body: review() });
    assert.equal(wrongUsage.status, 401);
    assert.equal(status(wrongUsage).message, untrusted('INVALID_PURPOSE'));
  });

  it('keeps /healthz, /readyz and /metrics reachable without a certificate, for the kubelet and Prometheus', async () => {
    const port = server.address().port;
    const health = await call(port, serverCa.cert, '/healthz');
    assert.deepEqual([health.status, health.body], [200, 'ok']);
    const ready = await call(port, serverCa.cert, '/readyz');
    assert.deepEqual([ready.status, ready.body], [200, 'ok']);
    const scrape = await call(port, serverCa.cert, '/metrics');
    assert.equal(scrape.status, 200);
    assert.match(scrape.body, /tolerator_unauthenticated_requests_total\{reason="no_certificate"\} [1-9]/);
  });

  it('refuses any other path without a certificate too (deny by default), but not with one', async () => {
    const port = server.address().port;
    const anonymous = await call(port, serverCa.cert, '/mutate');
    assert.equal(anonymous.status, 401, 'GET /mutate');
    const unknown = await call(port, serverCa.cert, '/debug/pprof');
    assert.equal(unknown.status, 401);
    const known = await call(port, serverCa.cert, '/debug/pprof', { client: apiServer });
    assert.equal(known.status, 404);
  });

  it('accepts every CA of a bundle that holds several', async () => {
    const second = await createCA('second-client-ca');
    const bundle = parseClientCaBundle(`${apiServerCa.cert}\n${second.cert}`);
    assert.equal(bundle.certificates.length, 2);
    const both = await startTlsServer({
      app: appFromArgs([]),
      port: 0,
      host: '127.0.0.1',
      certificate: await createServingCertificate(serverCa, [serviceName]),
      clientCa: { bundle },
      logger: silentLogger,
      metrics: createMetrics({ collectProcessMetrics: false }),
    });
    try {
      for (const ca of [apiServerCa, second]) {
        const answer = await call(both.address().port, serverCa.cert, '/mutate', {
          client: await createClientCertificate(ca),
          body: review(),
        });
        assert.equal(answer.status, 200, answer.body);
      }
    } finally {
      await both.close(1000);
    }
  });
});

describe('client CA reload', () => {
  let serverCa: Pair;
  let caA: Pair;
  let caB: Pair;
  let clientA: Pair;
  let clientB: Pair;
  let caDir: string;
  let certDir: string;
  let server: TlsServer;
  const metrics = createMetrics({ collectProcessMetrics: false });
  const logs: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logs.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    }),
  );
  const reloads = (result: string): Promise<number> => counter(metrics, 'tolerator_client_ca_reloads_total', `result="${result}"`);

  /** The kubelet's atomic writer: files in a timestamped directory, `..data` swapped by rename. */
  function writeVolume(dir: string, files: Record<string, string>, generation: number): void {
    const data = join(dir, `..2026_11_30_0${generation}`);
    mkdirSync(data);
    for (const [name, text] of Object.entries(files)) writeFileSync(join(data, name), text);
    symlinkSync(`..2026_11_30_0${generation}`, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  }

  before(async () => {
    serverCa = await createCA('tolerator-ca');
    caA = await createCA('client-ca-a');
    caB = await createCA('client-ca-b');
    clientA = await createClientCertificate(caA);
    clientB = await createClientCertificate(caB);
    caDir = mkdtempSync(join(tmpdir(), 'tolerator-client-ca-'));
    certDir = mkdtempSync(join(tmpdir(), 'tolerator-tls-'));
    writeVolume(caDir, { 'ca.crt': caA.cert }, 1);
    symlinkSync('..data/ca.crt', join(caDir, 'ca.crt'));
    const serving = await createServingCertificate(serverCa, [serviceName]);
    writeVolume(certDir, { 'tls.crt': serving.cert, 'tls.key': serving.key }, 1);
    symlinkSync('..data/tls.crt', join(certDir, 'tls.crt'));
    symlinkSync('..data/tls.key', join(certDir, 'tls.key'));
    server = await startTlsServer({
      app: appFromArgs([]),
      port: 0,
      host: '127.0.0.1',
      certificate: serving,
      certificateFiles: { certFile: join(certDir, 'tls.crt'), keyFile: join(certDir, 'tls.key') },
      clientCa: { bundle: parseClientCaBundle(caA.cert), file: join(caDir, 'ca.crt') },
      logger,
      metrics,
      pollIntervalMs: 200,
    });
  });
  after(async () => {
    await server.close(1000);
    rmSync(caDir, { recursive: true, force: true });
    rmSync(certDir, { recursive: true, force: true });
  });

  it('trusts the new CA and no longer the old one, for new connections, resumed sessions and open ones', async () => {
    const port = server.address().port;
    // An open keep-alive connection and a cached TLS session, both made with CA A's client.
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1, maxCachedSessions: 0 });
    const sessions = new Agent({ keepAlive: false, maxCachedSessions: 10 });
    try {
      const open = await call(port, serverCa.cert, '/mutate', { client: clientA, body: review(), agent: keepAlive });
      assert.equal(open.status, 200);
      assert.equal((await call(port, serverCa.cert, '/mutate', { client: clientA, body: review(), agent: sessions })).status, 200);
      const resumedBefore = await call(port, serverCa.cert, '/mutate', { client: clientA, body: review(), agent: sessions });
      assert.deepEqual([resumedBefore.status, resumedBefore.resumed], [200, true], 'sessions are resumed while CA A is trusted');
      assert.equal((await call(port, serverCa.cert, '/mutate', { client: clientB, body: review() })).status, 401);
      assert.equal(open.socket.destroyed, false, 'the keep-alive connection is still open');

      writeVolume(caDir, { 'ca.crt': caB.cert }, 2);
      await waitFor(async () => (await reloads('success')) >= 1, 'the new client CA to be loaded');

      const newB = await call(port, serverCa.cert, '/mutate', { client: clientB, body: review() });
      assert.equal(newB.status, 200, newB.body);
      const newA = await call(port, serverCa.cert, '/mutate', { client: clientA, body: review() });
      assert.equal(newA.status, 401);
      assert.equal(status(newA).message, untrusted('UNABLE_TO_VERIFY_LEAF_SIGNATURE'));

      const resumedAfter = await call(port, serverCa.cert, '/mutate', { client: clientA, body: review(), agent: sessions });
      assert.deepEqual([resumedAfter.resumed, resumedAfter.status], [false, 401], 'a session from before the reload is not resumed');

      // The connection opened under CA A: answered once more, then closed by the server.
      const last = await call(port, serverCa.cert, '/mutate', { client: clientA, body: review(), agent: keepAlive });
      assert.equal(last.socket, open.socket, 'the request went over the connection opened before the reload');
      assert.deepEqual([last.status, last.connection], [200, 'close']);
      const next = await call(port, serverCa.cert, '/mutate', { client: clientA, body: review(), agent: keepAlive });
      assert.notEqual(next.socket, open.socket);
      assert.equal(next.status, 401);
    } finally {
      keepAlive.destroy();
      sessions.destroy();
    }
    const expiry = await metrics.registry.getSingleMetricAsString('tolerator_client_ca_expiry_timestamp_seconds');
    assert.match(expiry, new RegExp(`tolerator_client_ca_expiry_timestamp_seconds ${Date.parse('2036-11-01T00:00:00Z') / 1000}`));
  });

  it('keeps the previous CAs when the new file is invalid, and says so in the log and /metrics', async () => {
    const failuresBefore = await reloads('failure');
    writeVolume(caDir, { 'ca.crt': clientB.key }, 3);
    await waitFor(async () => (await reloads('failure')) > failuresBefore, 'the invalid file to be refused');
    const port = server.address().port;
    assert.equal((await call(port, serverCa.cert, '/validate', { client: clientB, body: review() })).status, 200, 'CA B still trusted');
    assert.equal((await call(port, serverCa.cert, '/validate', { client: clientA, body: review() })).status, 401, 'CA A still not trusted');
    assert.equal(await server.reloadClientCa(), false);
    const warning = logs.find((entry) => entry.msg === 'client CA file not reloaded; the previous CAs stay trusted');
    assert.ok(warning !== undefined, 'a warning for the refused file');
    assert.equal(warning.file, join(caDir, 'ca.crt'));
    assert.match((warning.err as { message: string }).message, /^block 1 is a PEM "PRIVATE KEY"/);
  });

  it('keeps the client CAs when the serving certificate is reloaded', async () => {
    const renewed = await createServingCertificate(serverCa, [serviceName]);
    writeVolume(certDir, { 'tls.crt': renewed.cert, 'tls.key': renewed.key }, 2);
    assert.equal(await server.reloadCertificate(), true);
    const port = server.address().port;
    const answer = await call(port, serverCa.cert, '/validate', { client: clientB, body: review() });
    assert.equal(answer.status, 200, answer.body);
    assert.equal(answer.socket.getPeerX509Certificate()?.fingerprint256, new X509Certificate(renewed.cert).fingerprint256);
    assert.equal((await call(port, serverCa.cert, '/validate', { body: review() })).status, 401);
  });

  it('counts a connection accepted before a reload, whose handshake ends after it, as verified against the old CAs', async () => {
    const port = server.address().port;
    // The TCP connection is accepted while CA B is trusted; the server gives it CA B's context.
    const tcp = tcpConnect({ host: '127.0.0.1', port });
    await once(tcp, 'connect');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const successes = await reloads('success');
    writeVolume(caDir, { 'ca.crt': caA.cert }, 4);
    await waitFor(async () => (await reloads('success')) > successes, 'CA A to be loaded again');
    // The handshake now runs against CA B's context: B's client is verified and answered once,
    // and the connection is closed so that its next request meets CA A.
    const late = await call(port, serverCa.cert, '/mutate', { client: clientB, body: review(), tcp });
    assert.deepEqual([late.status, late.connection], [200, 'close']);
    assert.equal((await call(port, serverCa.cert, '/mutate', { client: clientB, body: review() })).status, 401);
    assert.equal((await call(port, serverCa.cert, '/mutate', { client: clientA, body: review() })).status, 200);
  });
});

describe('parseClientCaBundle', () => {
  it('refuses a file without certificates, with a private key, or with a certificate that does not parse', async () => {
    const ca = await createCA();
    assert.throws(() => parseClientCaBundle(''), { message: 'no PEM CERTIFICATE block found' });
    assert.throws(() => parseClientCaBundle(`${ca.cert}\n${ca.key}`), { message: /^block 2 is a PEM "PRIVATE KEY", not a CERTIFICATE/ });
    const broken = ca.cert.replace(/\n([A-Za-z0-9+/]{10})/, '\nAAAAAAAAAA');
    assert.throws(() => parseClientCaBundle(broken), { message: /^certificate 1 does not parse: / });
  });

  it('lists each CA with its subject and expiry', async () => {
    const bundle = parseClientCaBundle((await createCA('one')).cert + (await createCA('two')).cert);
    assert.deepEqual(
      bundle.certificates.map((certificate) => [certificate.subject, certificate.notAfter.toISOString()]),
      [
        ['CN=one', '2036-11-01T00:00:00.000Z'],
        ['CN=two', '2036-11-01T00:00:00.000Z'],
      ],
    );
  });
});

describe('tolerator serve --client-ca-file', () => {
  /** Runs the CLI until it exits or logs that it serves. */
  function serve(args: readonly string[]): { child: ReturnType<typeof spawn>; port: Promise<number>; stderr: () => string } {
    const child = spawnServe(args);
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    let stdout = '';
    const port = new Promise<number>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8');
        const line = stdout.split('\n').find((entry) => entry.includes('"tolerator serving"'));
        if (line !== undefined) resolve((JSON.parse(line) as { port: number }).port);
      });
      child.once('exit', (code) => {
        reject(new Error(`serve exited with ${String(code)}: ${stderr}`));
      });
    });
    port.catch(() => undefined);
    return { child, port, stderr: () => stderr };
  }

  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tolerator-client-ca-flag-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  for (const row of [
    {
      name: 'a missing file',
      file: 'missing.crt',
      text: undefined,
      message: (path: string) => `--client-ca-file ${path}: ENOENT: no such file or directory, open '${path}'`,
    },
    {
      name: 'a file holding a key',
      file: 'key.pem',
      text: 'key',
      message: (path: string) =>
        `--client-ca-file ${path}: block 1 is a PEM "PRIVATE KEY", not a CERTIFICATE: the file must hold only the CA certificates that sign client certificates`,
    },
    {
      name: 'a file without a certificate',
      file: 'empty.crt',
      text: '',
      message: (path: string) => `--client-ca-file ${path}: no PEM CERTIFICATE block found`,
    },
  ]) {
    it(`refuses to start with ${row.name}: exit code 2 and the reason, as for any flag error`, async () => {
      const path = join(dir, row.file);
      if (row.text !== undefined) writeFileSync(path, row.text === 'key' ? (await createCA()).key : row.text);
      const run = serve(['--client-ca-file', path]);
      const [code] = (await once(run.child, 'exit')) as [number | null];
      assert.equal(code, 2);
      assert.equal(run.stderr(), `tolerator serve: ${row.message(path)}\n`);
    });
  }

  it('wires the flag: probes open, reviews refused without a certificate', async () => {
    const ca = await createCA('webhook-client-ca');
    const path = join(dir, 'ca.crt');
    writeFileSync(path, ca.cert);
    const run = serve(['--client-ca-file', path]);
    try {
      const port = await run.port;
      // The development certificate is self-signed for localhost: trust it for these calls only.
      const send = (method: string, target: string, client?: Pair): Promise<number> =>
        new Promise((resolve, reject) => {
          const req = httpsRequest(
            {
              host: '127.0.0.1',
              port,
              path: target,
              method,
              agent: false,
              rejectUnauthorized: false,
              headers: { 'content-type': 'application/json' },
              ...(client ?? {}),
            },
            (res) => {
              res.resume();
              res.on('end', () => {
                resolve(res.statusCode ?? 0);
              });
            },
          );
          req.on('error', reject);
          req.end(method === 'POST' ? review() : undefined);
        });
      assert.equal(await send('GET', '/healthz'), 200);
      assert.equal(await send('POST', '/mutate'), 401);
      assert.equal(await send('POST', '/mutate', await createClientCertificate(ca)), 200);
    } finally {
      run.child.kill('SIGKILL');
    }
  });
});
