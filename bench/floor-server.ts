/**
 * The floor: what Node.js alone costs for a webhook's work. A plain `node:https` server with no
 * framework that reads the body, `JSON.parse`s the AdmissionReview, builds a small JSON Patch
 * (appends one toleration) and answers an AdmissionReview — on the same certificate, TLS settings
 * and keep-alive as tolerator's server (src/http/tls-server.ts).
 *
 *   node bench/floor-server.ts --port P --bind-address 127.0.0.1 --tls-cert-file F --tls-private-key-file K
 *
 * With `--express`, the same work behind express 5 and `express.raw` (as src/http/app.ts reads
 * bodies): a second reference that shows what the framework alone costs on top of the floor.
 *
 * Prints one line `floor serving <port>` once it listens.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { parseArgs } from 'node:util';
import express from 'express';

const { values } = parseArgs({
  options: {
    port: { type: 'string' },
    'bind-address': { type: 'string', default: '127.0.0.1' },
    'tls-cert-file': { type: 'string' },
    'tls-private-key-file': { type: 'string' },
    express: { type: 'boolean', default: false },
  },
});
const certFile = values['tls-cert-file'];
const keyFile = values['tls-private-key-file'];
if (values.port === undefined || certFile === undefined || keyFile === undefined) {
  throw new Error('floor-server: --port, --tls-cert-file and --tls-private-key-file are required');
}

/** Tolerator's limit (src/admission/body-limits.ts): the floor reads what tolerator reads. */
const maxBodyBytes = 37 * 1024 * 1024;

const toleration = { key: 'example.com/floor', operator: 'Exists', effect: 'NoSchedule' };

interface Review {
  apiVersion?: string;
  request?: { uid?: string; object?: { spec?: { tolerations?: unknown[] | null } } };
}

function answer(body: Buffer, mutate: boolean): string {
  const review = JSON.parse(body.toString('utf8')) as Review;
  const request = review.request;
  if (request?.uid === undefined) {
    throw new Error('no request.uid');
  }
  const response: Record<string, unknown> = { uid: request.uid, allowed: true };
  if (mutate) {
    const existing = request.object?.spec?.tolerations;
    const patch = Array.isArray(existing)
      ? [{ op: 'add', path: '/spec/tolerations/-', value: toleration }]
      : [{ op: 'add', path: '/spec/tolerations', value: [toleration] }];
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(JSON.stringify(patch)).toString('base64');
  }
  return JSON.stringify({ apiVersion: review.apiVersion ?? 'admission.k8s.io/v1', kind: 'AdmissionReview', response });
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const mutate = req.url === '/mutate';
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    return;
  }
  if (req.method !== 'POST' || (!mutate && req.url !== '/validate')) {
    res.writeHead(404).end();
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBodyBytes) {
      res.writeHead(413, { connection: 'close' }).end();
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    let payload: string;
    try {
      payload = answer(Buffer.concat(chunks, size), mutate);
    } catch (error) {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: (error as Error).message }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }).end(payload);
  });
}

function expressApp(): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const readBody = express.raw({ type: () => true, limit: maxBodyBytes });
  for (const path of ['/mutate', '/validate']) {
    app.post(path, readBody, (req, res) => {
      const body: unknown = req.body;
      res.type('application/json').send(answer(Buffer.isBuffer(body) ? body : Buffer.alloc(0), path === '/mutate'));
    });
  }
  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok');
  });
  return app;
}

const server = createServer(
  { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8'), minVersion: 'TLSv1.2' },
  values.express ? expressApp() : handle,
);
// The same timeouts as tolerator's server, so keep-alive behaves the same.
server.requestTimeout = 30_000;
server.headersTimeout = 10_000;
server.keepAliveTimeout = 95_000;
server.listen(Number(values.port), values['bind-address'], () => {
  const address = server.address();
  process.stdout.write(`floor serving ${typeof address === 'object' && address !== null ? address.port : values.port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
});
