/**
 * The HTTP application: the two review endpoints, and an express app for everything else
 * (health, readiness, metrics, and the answers to paths and methods we do not serve). It never
 * listens; src/http/tls-server.ts serves it and tests drive it with supertest.
 *
 * Why the review endpoints bypass express: they are on the path of every pod creation in the
 * cluster, and bench/ measured express's routing and body parsing at about 100 µs of CPU per
 * request — twice what Node's own HTTPS stack costs for the same review (bench/RESULTS.md). The
 * endpoints need none of it: one method, one path each, one body.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { AdmissionError, toStatusBody } from '../admission/errors.js';
import type { Pipeline, WebhookSide } from '../admission/pipeline.js';
import { buildAdmissionResponse } from '../admission/response.js';
import { parseAdmissionReview } from '../admission/review.js';
import type { Metrics } from './metrics.js';

/**
 * The largest body read. kube-apiserver refuses request bodies over 3 MiB
 * (MaxRequestBodyBytes), so one object is at most 3 MiB; an AdmissionReview carries `object`
 * and, on UPDATE, `oldObject`: 2 × 3 MiB, plus 1 MiB for the envelope (userInfo, options,
 * managedFields re-encoding) = 7 MiB, the same bound controller-runtime derives.
 */
export const maxBodyBytes = 7 * 1024 * 1024;

/**
 * The most of a refused body read, and dropped, before its 413 goes out: 64 MiB. kube-apiserver
 * writes a review whole before it reads the answer, and an answer sent while it is still writing
 * closes the connection with bytes unread, which resets it: the API server then reports
 * `write: broken pipe` instead of the 413's message (three calls in six, measured in
 * test/e2e/apiserver-side.e2e.ts). Read to its end, the body is answered over a clean close. The
 * API server's JSON escapes `<`, `>` and `&` to six bytes each, so its reviews exceed 7 MiB: an
 * UPDATE at its limits (an object stored at etcd's 1.5 MiB and a 3 MiB request) measured 26 MiB,
 * and 64 MiB is above any it can send. A larger body is nobody's review: it is answered at once.
 */
export const maxDrainedBytes = 64 * 1024 * 1024;

export interface Readiness {
  /** Whether this replica should receive reviews, and if not, why. */
  check(): { ready: boolean; reasons: readonly string[] };
  /** Lines `/readyz?verbose` adds after the verdict (which feature gates are in force and why); they never change the status. */
  detail?(): readonly string[];
}

export interface AppDependencies {
  readonly pipeline: Pipeline;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly readiness: Readiness;
  /** Monotonic milliseconds, for review durations. */
  readonly now: () => number;
}

export function createApp(deps: AppDependencies): RequestListener {
  const mutate = reviewHandler('mutate', deps);
  const validate = reviewHandler('validate', deps);
  const rest = createExpressApp(deps);
  return (req, res) => {
    if (req.method === 'POST') {
      // kube-apiserver appends `?timeout=<n>s` to the webhook's URL.
      const url = req.url ?? '';
      const query = url.indexOf('?');
      const path = query === -1 ? url : url.slice(0, query);
      if (path === '/mutate') {
        mutate(req, res);
        return;
      }
      if (path === '/validate') {
        validate(req, res);
        return;
      }
    }
    rest(req, res);
  };
}

function createExpressApp(deps: AppDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.all(['/mutate', '/validate'], (_req, _res, next) => {
    next(new AdmissionError('MethodNotAllowed', 'reviews are sent with POST'));
  });
  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok');
  });
  app.get('/readyz', (req, res) => {
    const { ready, reasons } = deps.readiness.check();
    const verdict = ready ? 'ok' : `not ready: ${reasons.join('; ')}`;
    // `?verbose`, as kube-apiserver's /readyz takes it: the same status, with the detail after the verdict.
    const verbose = req.query.verbose !== undefined;
    const detail = verbose ? (deps.readiness.detail?.() ?? []) : [];
    res
      .status(ready ? 200 : 503)
      .type('text/plain')
      .send(verbose ? [verdict, ...detail].join('\n') + '\n' : verdict);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  app.use((_req: Request, _res: Response, next: NextFunction) => {
    next(new AdmissionError('NotFound', 'no such path; the webhook serves POST /mutate and POST /validate'));
  });
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    sendError(error, req.path, res, deps);
  });
  return app;
}

/** Reads the whole body, refusing one that is, or grows, larger than the limit. */
function readBody(req: IncomingMessage): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBodyBytes) {
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        req.off('data', onData);
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      resolve(Buffer.concat(chunks, size));
    });
    // A client that goes away mid-body: Node emits 'error' (ECONNRESET) on the request.
    req.once('error', () => {
      reject(new AdmissionError('MalformedJSON', 'request body was cut short'));
    });
  });
}

function tooLarge(): AdmissionError {
  return new AdmissionError('BodyTooLarge', 'request body is larger than the limit of 7 MiB');
}

function checkHeaders(req: IncomingMessage): void {
  const contentType = req.headers['content-type'] ?? '';
  const mediaType = contentType.split(';', 1)[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    throw new AdmissionError('UnsupportedMediaType', `Content-Type must be application/json, got ${JSON.stringify(contentType)}`);
  }
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity') {
    throw new AdmissionError(
      'UnsupportedMediaType',
      `Content-Encoding ${JSON.stringify(encoding)} is not supported; send identity-encoded UTF-8 JSON`,
    );
  }
}

function reviewHandler(side: WebhookSide, deps: AppDependencies): RequestListener {
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    checkHeaders(req);
    const body = await readBody(req);
    const started = deps.now();
    const parsed = parseAdmissionReview(body);
    const { decision, trace } = await deps.pipeline.review(parsed, [side]);
    const review = buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision);
    const payload = JSON.stringify(review);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
    res.end(payload);

    const seconds = (deps.now() - started) / 1000;
    const decisionLabel = decision.allowed ? (review.response.patch === undefined ? 'allowed' : 'patched') : 'denied';
    const attributes = parsed.attributes;
    deps.metrics.reviews.inc({
      webhook: side,
      operation: attributes.operation,
      plugin: trace.plugins.at(-1) ?? 'none',
      decision: decisionLabel,
    });
    deps.metrics.reviewDuration.observe({ webhook: side }, seconds);
    if (deps.logger.isLevelEnabled('info')) {
      deps.logger.info(
        {
          webhook: side,
          uid: parsed.uid,
          kind: attributes.kind.kind,
          namespace: attributes.namespace,
          name: attributes.name,
          operation: attributes.operation,
          dryRun: attributes.dryRun,
          decision: decisionLabel,
          plugins: trace.plugins,
          deniedBy: trace.deniedBy,
          patchOperations: decision.patch?.length ?? 0,
          responseBytes: payload.length,
          durationMs: Math.round(seconds * 1e6) / 1e3,
        },
        'admission review',
      );
    }
  };
  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof AdmissionError && error.code === 'BodyTooLarge') {
        // The rest of the body is read into nothing (never kept), then answered, and the
        // connection closed: see maxDrainedBytes.
        res.setHeader('connection', 'close');
        answerOnceRead(req, () => {
          sendError(error, req.url ?? '', res, deps);
        });
        return;
      }
      sendError(error, req.url ?? '', res, deps);
    });
  };
}

/**
 * Calls `answer` once the rest of `req`'s body has arrived (and been dropped), or at once when
 * the body is, or grows, larger than maxDrainedBytes. A client that goes away, or that the
 * server's request timeout cuts off, gets no answer: there is no one left to read it.
 */
function answerOnceRead(req: IncomingMessage, answer: () => void): void {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (req.readableEnded || declared > maxDrainedBytes) {
    answer();
    return;
  }
  let drained = 0;
  let answered = false;
  const once = (): void => {
    if (answered) return;
    answered = true;
    answer();
  };
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > maxDrainedBytes) once();
  });
  req.once('end', once);
}

/** The one place an error becomes an answer: a Status body with the error's HTTP code. */
function sendError(error: unknown, path: string, res: ServerResponse, deps: AppDependencies): void {
  const status = toStatusBody(error);
  if (error instanceof AdmissionError) {
    deps.metrics.rejectedRequests.inc({ code: String(status.code) });
    deps.logger.warn({ path, code: status.code, reason: error.code, message: error.message }, 'request refused');
  } else {
    // Only here does an error's text go anywhere: to the log, never onto the wire.
    deps.metrics.undecidedReviews.inc();
    deps.logger.error({ err: error, path }, 'could not decide');
  }
  if (res.headersSent) {
    return;
  }
  const payload = JSON.stringify(status);
  res.writeHead(status.code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
  res.end(payload);
}
