/**
 * Bodies in flight: `readBody` bounded one request, but nothing bounded how many were held, so 80
 * unauthenticated connections each sending a body one byte short of the limit, then waiting, took
 * a replica to 657 MiB of RSS in two seconds, past the Deployment's 512 MiB. Now a budget of body
 * bytes, derived from the memory the process has (src/http/transport-limits.ts), holds what is
 * received until it is answered; a body beyond it is refused with 503 and Retry-After; a body
 * still arriving after the webhooks' timeoutSeconds is cut off; the connections are bounded too.
 *
 * Over real TLS, with the budget of the Deployment's 512 MiB container. What is asserted is what
 * the budget holds (bytes), and which connections were refused (counts), never how long it took.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { createApp } from '../../src/http/app.js';
import { BodyBudget } from '../../src/http/body-budget.js';
import { maxBodyBytes } from '../../src/admission/body-limits.js';
import { createMetrics } from '../../src/http/metrics.js';
import { bodyTimeoutMs, startTlsServer, type TlsServer } from '../../src/http/tls-server.js';
import { maxWorkerHeapMib, smallBodyBytes, transportLimits, workerHeapMib } from '../../src/http/transport-limits.js';
import { createCA, createServingCertificate, type Pair } from '../support/certificates.js';
import { loadReviewFixture, pipelineFromArgs, silentLogger } from '../support/harness.js';

const MiB = 1024 * 1024;
/** The Deployment's memory limit (deploy/base/deployment.yaml), as the cgroup reports it to the process. */
const deploymentMemory = 512 * MiB;
const limits = transportLimits({ constrainedMemoryBytes: deploymentMemory, totalMemoryBytes: 64 * 1024 * MiB, cpus: 2 });

interface Exchange {
  readonly socket: TLSSocket;
  /** Resolves with the status line's code once the answer's head arrives, or 0 when the connection closes without one. */
  readonly status: Promise<number>;
  /** The answer's head, once it arrived. */
  head(): string;
  /** Body bytes written so far. */
  sent(): number;
}

const filler = Buffer.alloc(64 * 1024, 0x20);

/**
 * A POST of `declared` bytes (Content-Length; undefined: chunked) of which it writes `send`, as
 * fast as the socket takes them, stopping early once an answer arrives; then it waits.
 */
function post(port: number, path: string, declared: number | undefined, send: number): Exchange {
  const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false });
  let received = '';
  let written = 0;
  let answered = false;
  const status = new Promise<number>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(received);
      if (match !== null && !answered) {
        answered = true;
        resolve(Number(match[1]));
      }
    });
    socket.on('close', () => {
      resolve(0);
    });
    socket.on('error', () => undefined);
  });
  socket.once('secureConnect', () => {
    const length = declared === undefined ? 'Transfer-Encoding: chunked' : `Content-Length: ${declared}`;
    socket.write(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${length}\r\n\r\n`);
    const pump = (): void => {
      while (written < send && !answered && !socket.destroyed) {
        const n = Math.min(filler.length, send - written);
        written += n;
        const chunk = filler.subarray(0, n);
        const ok = socket.write(
          declared === undefined ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk,
        );
        if (!ok) {
          socket.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });
  return { socket, status, head: () => received.slice(0, received.indexOf('\r\n\r\n')), sent: () => written };
}

/** Waits for a state the server reaches asynchronously: up to a minute, for a loaded machine; no assertion is about the time. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2_400; i++) {
    if (check()) return;
    await sleep(25);
  }
  assert.fail(`never: ${what}`);
}

describe('bodies in flight: a budget of body bytes and connections, derived from the memory the process has', { timeout: 300_000 }, () => {
  let pair: Pair;
  const servers: TlsServer[] = [];
  before(async () => {
    pair = await createServingCertificate(await createCA(), ['localhost']);
  });
  after(async () => {
    await Promise.all(servers.map((server) => server.close(100)));
  });

  async function serve(options: { budget: BodyBudget; requestTimeoutMs?: number; maxConnections?: number }): Promise<TlsServer> {
    const app = createApp({
      pipeline: pipelineFromArgs([]),
      logger: silentLogger,
      metrics: createMetrics({ collectProcessMetrics: false }),
      readiness: { check: () => ({ ready: true, reasons: [] }) },
      now: () => performance.now(),
      bodyBudget: options.budget,
    });
    const server = await startTlsServer({
      app,
      port: 0,
      host: '127.0.0.1',
      certificate: pair,
      logger: silentLogger,
      metrics: createMetrics({ collectProcessMetrics: false }),
      ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
      ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
    });
    servers.push(server);
    return server;
  }

  const deploymentBudget = (): BodyBudget =>
    new BodyBudget({ capacityBytes: limits.bodyBudgetBytes, smallReserveBytes: limits.smallReserveBytes, smallBodyBytes });

  it('in the Deployment’s 512 MiB: 64 MiB of bodies (8 MiB of them for small ones), 963 connections, two review workers', () => {
    assert.equal(limits.memoryBytes, deploymentMemory);
    assert.equal(limits.bodyBudgetBytes, 64 * MiB);
    assert.equal(limits.smallReserveBytes, 8 * MiB);
    assert.equal(limits.maxConnections, 963);
    // 512 − (160 + 64 + 32 + 32) = 224 MiB for workers of 96 MiB measured peak: two.
    assert.equal(limits.reviewWorkers, 2);
    assert.equal(limits.workerHeapMib, workerHeapMib, 'each with the heap the worst review needs');
    assert.equal(limits.reviewMemoryBytes, 142 * MiB, 'the share less two idle workers of 41 MiB');
    // Without a cgroup limit (Node.js 20 reports 2^64 − 1) the machine's memory counts.
    const unconstrained = transportLimits({ constrainedMemoryBytes: 2 ** 64 - 1, totalMemoryBytes: 2048 * MiB, cpus: 8 });
    assert.equal(unconstrained.memoryBytes, 2048 * MiB);
    assert.equal(unconstrained.reviewWorkers, 8, '2 GiB − 672 MiB holds fourteen workers of 96 MiB; eight CPUs allow eight');
    const large = transportLimits({ constrainedMemoryBytes: undefined, totalMemoryBytes: 24 * 1024 * MiB, cpus: 2 });
    assert.equal(large.workerHeapMib, maxWorkerHeapMib, 'a worker in 10 GiB gets no more than the most a review needs, with margin');
    // However little memory there is, the largest review fits in the budget and there is one worker.
    const small = transportLimits({ constrainedMemoryBytes: 128 * MiB, totalMemoryBytes: 2048 * MiB, cpus: 1 });
    assert.ok(small.bodyBudgetBytes - small.smallReserveBytes >= maxBodyBytes);
    assert.equal(small.reviewWorkers, 1);
    assert.equal(small.workerHeapMib, workerHeapMib, 'a worker never has less than the least heap the worst review needs');
  });

  it('80 connections each sending a body one byte short of the limit, then waiting, hold no more than the budget; the rest get 503 with Retry-After', async () => {
    const budget = deploymentBudget();
    // Long enough for the one body that fits to arrive (but for a byte) over loopback TLS on a loaded machine.
    const server = await serve({ budget, requestTimeoutMs: 60_000 });
    const port = server.address().port;
    const buffersBefore = process.memoryUsage().arrayBuffers;
    const exchanges = Array.from({ length: 80 }, () => post(port, '/validate', maxBodyBytes, maxBodyBytes - 1));
    // (64 MiB − 8 MiB for small bodies) / 37 MiB: one large body fits at a time, the 79 others are refused.
    await until(() => exchanges.filter((exchange) => exchange.head() !== '').length >= 79, '79 connections refused');
    const refused = exchanges.filter((exchange) => exchange.head() !== '');
    const waiting = exchanges.filter((exchange) => exchange.head() === '');
    assert.equal(refused.length, 79);
    assert.equal(waiting.length, 1);
    for (const exchange of refused) {
      assert.equal(await exchange.status, 503, exchange.head());
      assert.match(exchange.head(), /\r\nretry-after: 1\r\n/i);
      assert.match(exchange.head(), /\r\nconnection: close\r\n/i);
    }
    await until(() => waiting[0]?.sent() === maxBodyBytes - 1, 'the one that fits sent all but its last byte');
    assert.equal(budget.held, maxBodyBytes, 'the waiting body is held, as declared');
    assert.ok(budget.peak <= budget.capacityBytes - budget.smallReserveBytes, `peak ${budget.peak}`);
    // What the process holds in buffers follows the budget, not the 80 × 37 MiB that were offered.
    const grown = process.memoryUsage().arrayBuffers - buffersBefore;
    assert.ok(grown < budget.capacityBytes + 16 * MiB, `buffers grew by ${(grown / MiB).toFixed(0)} MiB`);
    // The one waiting goes away: its share comes back. (Cut off by the request timeout, it would
    // too: 'a slow body…' below, and test/faults/hostile-input.test.ts.)
    for (const exchange of exchanges) exchange.socket.destroy();
    await until(() => budget.held === 0, 'the abandoned body released');
  });

  it('a body without Content-Length is counted chunk by chunk, refused 503 when it outgrows the budget, and given back when cut off', async () => {
    const budget = new BodyBudget({ capacityBytes: 4 * MiB, smallReserveBytes: 1 * MiB, smallBodyBytes });
    const server = await serve({ budget, requestTimeoutMs: 2_000 });
    // Eight chunked bodies of 2 MiB that never end (no last chunk): 16 MiB offered, 3 MiB allowed.
    const exchanges = Array.from({ length: 8 }, () => post(server.address().port, '/validate', undefined, 2 * MiB));
    const statuses = await Promise.all(exchanges.map((exchange) => exchange.status));
    assert.ok(budget.peak <= 3 * MiB, `peak ${budget.peak}`);
    const refused = statuses.filter((status) => status === 503).length;
    // At most one whole 2 MiB body fits in 3 MiB; the others are refused as they outgrow it, or cut off by the timeout (408, or closed).
    assert.ok(refused >= 1 && statuses.every((status) => [503, 408, 0].includes(status)), `answered ${statuses.join(', ')}`);
    assert.ok(statuses.filter((status) => status !== 503).length <= 2, `answered ${statuses.join(', ')}`);
    for (const exchange of exchanges) exchange.socket.destroy();
    await until(() => budget.held === 0, 'everything released');
  });

  it('large bodies leave the small bodies’ reserve: an ordinary review is answered while large ones fill the rest', async () => {
    const budget = new BodyBudget({ capacityBytes: 4 * MiB, smallReserveBytes: 1 * MiB, smallBodyBytes });
    const server = await serve({ budget, requestTimeoutMs: 3_000 });
    const port = server.address().port;
    // Three large bodies of 1 MiB each, one byte short: they fill the 3 MiB large bodies may use.
    const large = Array.from({ length: 3 }, () => post(port, '/validate', MiB, MiB - 1));
    await until(() => budget.held === 3 * MiB, 'three large bodies held');
    const another = post(port, '/validate', MiB, MiB - 1);
    assert.equal(await another.status, 503, 'a fourth large body does not fit');
    const ordinary = JSON.stringify(loadReviewFixture('burstable-create-no-tolerations').review);
    const small = connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false });
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      small.on('data', (chunk: Buffer) => {
        text += chunk.toString('utf8');
        if (text.includes('"response"')) resolve(text);
      });
      small.once('secureConnect', () => {
        small.write(
          `POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(ordinary)}\r\n\r\n${ordinary}`,
        );
      });
    });
    assert.match(answer, /^HTTP\/1\.1 200 /);
    small.destroy();
    for (const exchange of [...large, another]) exchange.socket.destroy();
    await until(() => budget.held === 0, 'everything released');
  });

  it('a slow body gets the body timeout, derived from the webhooks’ timeoutSeconds in deploy/ (5 s, not 30 s)', async () => {
    const server = await serve({ budget: deploymentBudget() });
    assert.equal(server.server.requestTimeout, bodyTimeoutMs, 'the default request timeout');
    assert.equal(server.server.headersTimeout, bodyTimeoutMs);
    const seconds = new Set<number>();
    for (const file of ['deploy/base/mutating-webhook.yaml', 'deploy/base/validating-webhook.yaml']) {
      const webhook = parse(readFileSync(file, 'utf8')) as { webhooks: { timeoutSeconds: number }[] };
      for (const entry of webhook.webhooks) seconds.add(entry.timeoutSeconds);
    }
    const values = parse(readFileSync('deploy/helm/tolerator/values.yaml', 'utf8')) as {
      webhooks: { mutating: { timeoutSeconds: number }; validating: { timeoutSeconds: number } };
    };
    seconds.add(values.webhooks.mutating.timeoutSeconds);
    seconds.add(values.webhooks.validating.timeoutSeconds);
    assert.deepEqual([...seconds], [bodyTimeoutMs / 1000], 'one timeoutSeconds everywhere, and the body timeout is it (not 30 s)');
  });

  it('connections beyond the limit are closed as they arrive; one that never completes its TLS handshake is closed after the timeout', async () => {
    const budget = deploymentBudget();
    const server = await serve({ budget, requestTimeoutMs: 500, maxConnections: 3 });
    const port = server.address().port;
    const open = Array.from({ length: 3 }, () => tcpConnect(port, '127.0.0.1'));
    await Promise.all(open.map((socket) => new Promise((resolve) => socket.once('connect', resolve))));
    const fourth = tcpConnect(port, '127.0.0.1');
    const fourthClosed = new Promise<boolean>((resolve) => {
      fourth.once('close', () => {
        resolve(true);
      });
    });
    fourth.on('error', () => undefined);
    assert.equal(await Promise.race([fourthClosed, sleep(5_000).then(() => false)]), true, 'the fourth connection is closed');
    // The three never start TLS: the handshake timeout closes them.
    const closed = await Promise.all(
      open.map(
        (socket) =>
          new Promise<boolean>((resolve) => {
            socket.on('error', () => undefined);
            socket.once('close', () => {
              resolve(true);
            });
            setTimeout(() => {
              resolve(false);
            }, 10_000).unref();
          }),
      ),
    );
    assert.deepEqual(closed, [true, true, true]);
  });
});
