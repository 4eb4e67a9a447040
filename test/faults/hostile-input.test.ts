/**
 * Hostile input that must get a correct answer rather than a 4xx: `__proto__` and `constructor`
 * keys at every level a plugin reads, integers beyond 2^53 that the API server legitimately sends;
 * and hostile delivery: a body trickling in slower than the request timeout over real TLS, and
 * thousands of hostile requests that must not leave memory behind.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect } from 'node:tls';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import jsonpatch from 'fast-json-patch';
import request from 'supertest';
import type { Toleration } from '../../src/api/types.js';
import { createMetrics } from '../../src/http/metrics.js';
import { startTlsServer, type TlsServer } from '../../src/http/tls-server.js';
import { createCA, createServingCertificate } from '../support/certificates.js';
import { appFromArgs, loadReviewFixture, silentLogger } from '../support/harness.js';

const app = appFromArgs([]);

interface Review {
  request: {
    uid: string;
    operation: string;
    object: { metadata: Record<string, unknown>; spec: Record<string, unknown> };
    oldObject?: unknown;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

function review(): Review {
  return loadReviewFixture('burstable-create-defaults-present').review as unknown as Review;
}

interface WireReview {
  response: { uid: string; allowed: boolean; patch?: string };
}

async function post(body: string): Promise<{ status: number; answer: WireReview; text: string }> {
  const res = await request(app)
    .post('/mutate')
    .set('Content-Type', 'application/json')
    .serialize((text: unknown) => text as string)
    .send(body);
  return { status: res.status, answer: res.body as WireReview, text: res.text };
}

function decodedPatch(answer: WireReview): { ops: jsonpatch.Operation[]; text: string } {
  const text = answer.response.patch === undefined ? '[]' : Buffer.from(answer.response.patch, 'base64').toString('utf8');
  return { ops: JSON.parse(text) as jsonpatch.Operation[], text };
}

/** The tolerations after the webhook's patch, applied by fast-json-patch to what was sent. */
function patchedTolerations(sent: string, answer: WireReview): Toleration[] {
  const object = (JSON.parse(sent) as Review).request.object;
  const { ops } = decodedPatch(answer);
  const patched = jsonpatch.applyPatch(object, ops, true, true).newDocument;
  return (patched.spec.tolerations ?? []) as Toleration[];
}

const memoryPressure = { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' };

describe('__proto__ and constructor keys are plain data', () => {
  // JSON.stringify drops a __proto__ key set by assignment, so each body is written as text.
  const rows: { name: string; edit: (text: string) => string }[] = [
    {
      name: 'in the review',
      edit: (text) =>
        text.replace(
          '{"kind":"AdmissionReview"',
          '{"__proto__":{"polluted":"review"},"constructor":{"prototype":{"polluted":"review"}},"kind":"AdmissionReview"',
        ),
    },
    {
      name: 'in the request',
      edit: (text) =>
        text.replace('"request":{', '"request":{"__proto__":{"polluted":"request","operation":"DELETE"},"constructor":{"name":"x"},'),
    },
    {
      name: 'in the object',
      edit: (text) => text.replace('"object":{', '"object":{"__proto__":{"polluted":"object","spec":{}},"constructor":"x",'),
    },
    {
      name: 'in metadata.annotations',
      edit: (text) =>
        text
          .replace(
            '"labels":{',
            '"annotations":{"__proto__":"x","constructor":"y","kubernetes.io/config.mirror":"no-not-really"},"labels":{',
          )
          .replace('"kubernetes.io/config.mirror":"no-not-really"', '"toString":"z"'),
    },
    {
      name: 'in spec',
      edit: (text) => text.replace('"spec":{', '"spec":{"__proto__":{"tolerations":[{"operator":"Exists"}],"hostNetwork":true},'),
    },
    {
      name: 'in a toleration',
      edit: (text) =>
        text.replace(
          '{"key":"node.kubernetes.io/not-ready"',
          '{"__proto__":{"polluted":"toleration","effect":""},"constructor":{"prototype":{"polluted":"toleration"}},"key":"node.kubernetes.io/not-ready"',
        ),
    },
    {
      name: 'in a container’s requests',
      edit: (text) => text.replace('"requests":{', '"requests":{"__proto__":"1","constructor":"2","hasOwnProperty":"3",'),
    },
  ];
  for (const row of rows) {
    it(`${row.name}: the answer is still the memory-pressure patch, and no prototype is polluted`, async () => {
      const sent = row.edit(JSON.stringify(review()));
      assert.ok(
        sent.includes('__proto__') || sent.includes('"constructor"') || sent.includes('"toString"'),
        'the hostile key is in the body',
      );
      const { status, answer, text } = await post(sent);
      assert.equal(status, 200, text);
      assert.equal(answer.response.uid, review().request.uid);
      assert.equal(answer.response.allowed, true);
      const tolerations = patchedTolerations(sent, answer);
      assert.deepEqual(tolerations.at(-1), memoryPressure);
      assert.equal(tolerations.length, 3, 'only memory-pressure was added to the two defaults');
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
      assert.equal(([] as unknown as Record<string, unknown>).polluted, undefined);
    });
  }
});

describe('integers the API server sends that a JavaScript number cannot hold exactly', () => {
  it('a quantity written as the number 1e20 is a valid (huge) request: the pod is Burstable and gets memory-pressure', async () => {
    const sent = JSON.stringify(review()).replace('"cpu":"100m"', '"cpu":1e20');
    assert.ok(sent.includes('"cpu":1e20'));
    const { status, answer } = await post(sent);
    assert.equal(status, 200);
    assert.deepEqual(patchedTolerations(sent, answer).at(-1), memoryPressure);
  });

  it('a tolerationSeconds of 2^53 + 1 that the merge moves is not rewritten by the patch', async () => {
    // A valid int64. PodTolerationRestriction's merge drops the first toleration (the third covers
    // it), so the big one moves to index 0 and the diff re-emits it; JSON.parse has already rounded
    // it to 2^53, and the patch would silently change how long the pod survives a NoExecute taint.
    const r = review();
    r.request.object.spec.tolerations = [
      { key: 'example.com/x', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'example.com/big', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 12345 },
      { key: 'example.com/x', operator: 'Exists' },
    ];
    const sent = JSON.stringify(r).replace('"tolerationSeconds":12345', '"tolerationSeconds":9007199254740993');
    const { status, answer } = await post(sent);
    assert.equal(status, 200);
    const { text } = decodedPatch(answer);
    assert.doesNotMatch(text, /9007199254740992/, `the patch rewrites 9007199254740993 as 9007199254740992: ${text}`);
  });

  it('a tolerationSeconds of 2^63 - 1 that the merge moves is never re-emitted beyond int64', async () => {
    const r = review();
    r.request.object.spec.tolerations = [
      { key: 'example.com/x', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'example.com/big', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 12345 },
      { key: 'example.com/x', operator: 'Exists' },
    ];
    const sent = JSON.stringify(r).replace('"tolerationSeconds":12345', '"tolerationSeconds":9223372036854775807');
    const { status, answer } = await post(sent);
    assert.equal(status, 200);
    const { text } = decodedPatch(answer);
    // JSON.stringify(2 ** 63) is "9223372036854776000", which Go's int64 decoder refuses: the API
    // server could not apply the patch at all.
    assert.doesNotMatch(text, /9223372036854776000/, `the patch holds a value beyond int64: ${text}`);
  });
});

describe('a body arriving slower than the request timeout, over TLS', () => {
  let server: TlsServer;
  const requestTimeoutMs = 1_000;

  before(async () => {
    const ca = await createCA();
    const pair = await createServingCertificate(ca, ['localhost']);
    server = await startTlsServer({
      app: appFromArgs([]),
      port: 0,
      host: '127.0.0.1',
      certificate: pair,
      logger: silentLogger,
      metrics: createMetrics({ collectProcessMetrics: false }),
      requestTimeoutMs,
    });
  });
  after(async () => {
    await server.close(100);
  });

  it('is cut off with 408 or a closed connection within requestTimeout + 2 s, and the server stays healthy', async () => {
    const body = JSON.stringify(review());
    const text = `POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const socket = connect({ host: '127.0.0.1', port: server.address().port, servername: 'localhost', rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', resolve);
      socket.once('error', reject);
    });
    const started = Date.now();
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    socket.on('error', () => undefined);
    let sent = 0;
    const drip = setInterval(() => {
      if (socket.writable && sent < text.length) socket.write(text.charAt(sent++));
    }, 200);
    // The bound: the timeout itself, plus 2 s for the server to notice; a bounded wait either way.
    const limitMs = requestTimeoutMs + 2_000;
    const closed = new Promise<boolean>((resolve) =>
      socket.once('close', () => {
        resolve(true);
      }),
    );
    const finished = await Promise.race([closed, sleep(limitMs + 3_000).then(() => false)]);
    clearInterval(drip);
    const elapsed = Date.now() - started;
    socket.destroy();
    assert.ok(finished, `the connection was still open after ${elapsed} ms (${sent} bytes sent, one every 200 ms)`);
    assert.ok(received === '' || /^HTTP\/1\.1 408 /.test(received), `answered ${JSON.stringify(received.slice(0, 80))}`);
    assert.ok(elapsed <= limitMs, `cut off after ${elapsed} ms; the request timeout is ${requestTimeoutMs} ms`);

    const health = await new Promise<string>((resolve, reject) => {
      const probe = connect({ host: '127.0.0.1', port: server.address().port, servername: 'localhost', rejectUnauthorized: false }, () => {
        probe.end('GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
      });
      let answer = '';
      probe.on('data', (chunk: Buffer) => (answer += chunk.toString()));
      probe.on('end', () => {
        resolve(answer);
      });
      probe.on('error', reject);
    });
    assert.match(health, /^HTTP\/1\.1 200 OK[\s\S]*\r\n\r\nok$/);
  });
});

describe('memory after thousands of hostile requests', () => {
  let httpServer: Server;
  before(async () => {
    httpServer = createServer(appFromArgs([]));
    await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    await new Promise((resolve) => httpServer.close(resolve));
  });

  /**
   * A full collection makes heapUsed comparable between two points in time. `--expose-gc` can be
   * set at run time for a new context (v8.setFlagsFromString), which gives a `gc` function without
   * changing how the suite is started.
   */
  function collectGarbage(): void {
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
  }

  function hostileBodies(): (string | Buffer)[] {
    const valid = JSON.stringify(review());
    return [
      '',
      valid.slice(0, 300),
      '[]',
      'null',
      '{"apiVersion": admission}',
      Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      '['.repeat(10_000) + ']'.repeat(10_000),
      valid.replace('"uid":"', '"uid":42,"x":"'),
      valid.replace('"operation":"CREATE"', '"operation":"PATCH"'),
      valid.replace('"tolerations":[', '"tolerations":[null,'),
      valid.replace('"tolerationSeconds":300', '"tolerationSeconds":1e400'),
      valid.replace('{"kind":"AdmissionReview"', '{"__proto__":{"polluted":1},"kind":"AdmissionReview"'),
      valid.replace('"cpu":"100m"', '"cpu":{}'),
      `{"pad":"${'x'.repeat(64 * 1024)}"}`,
      valid,
    ];
  }

  it('grows the heap by less than 20 MiB over 2,000 hostile requests', async () => {
    const bodies = hostileBodies();
    const send = async (body: string | Buffer): Promise<number> =>
      (
        await request(httpServer)
          .post('/mutate')
          .set('Content-Type', 'application/json')
          .serialize((b: unknown) => b as string)
          .send(body)
      ).status;
    // Warm-up: the first requests fill caches and compile code, which is not a leak.
    for (const body of bodies) await send(body);
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    const rounds = Math.ceil(2_000 / bodies.length);
    for (let round = 0; round < rounds; round++) {
      const statuses = await Promise.all(bodies.map(send));
      assert.ok(
        statuses.every((status) => status < 500),
        `no 5xx: ${statuses.join(',')}`,
      );
    }
    await sleep(50);
    collectGarbage();
    const growthMiB = (process.memoryUsage().heapUsed - before) / 2 ** 20;
    assert.ok(growthMiB < 20, `heapUsed grew by ${growthMiB.toFixed(1)} MiB`);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });
});
