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
import { clipText } from '../api/text-bounds.js';
import type { Pipeline, WebhookSide } from '../admission/pipeline.js';
import type { ReviewRunner } from '../admission/run-review.js';
import type { EventIntent } from '../events/event-intents.js';
import { answerReview } from '../admission/answer-review.js';
import type { BodyBudget, BodyReservation } from './body-budget.js';
import { maxBodyBytes, mebibytes } from '../admission/body-limits.js';
import type { Metrics } from './metrics.js';
import { smallBodyBytes as defaultSmallBodyBytes } from './transport-limits.js';

export { maxBodyBytes } from '../admission/body-limits.js';

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
  /** Request bodies in flight (src/http/body-budget.ts); absent: each body bounded alone. */
  readonly bodyBudget?: BodyBudget;
  /** Where bodies over `smallBodyBytes` are decided, away from the thread that accepts connections (src/server/review-pool.ts); absent: all on this thread. */
  readonly offload?: ReviewRunner;
  /** The largest body decided on this thread when there is an offload (default: src/http/transport-limits.ts). */
  readonly smallBodyBytes?: number;
  /**
   * Takes the Event a denial produces (`serve --emit-events`, src/kube/event-recorder.ts), called
   * once the answer is written; it returns at once and never changes the answer.
   */
  readonly recordEvent?: (event: EventIntent) => void;
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

interface ReceivedBody {
  readonly body: Buffer;
  /** The body's share of the budget, given back once the review is answered. */
  readonly reservation: BodyReservation | undefined;
}

/**
 * Reads the whole body, refusing one that is, or grows, larger than the limit, and one for which
 * the budget of bodies in flight has no room: a declared length is reserved before anything is
 * read, a body without one chunk by chunk.
 */
function readBody(req: IncomingMessage, budget: BodyBudget | undefined): Promise<ReceivedBody> {
  const header = req.headers['content-length'];
  const declared = header === undefined ? undefined : Number(header);
  if (declared !== undefined && declared > maxBodyBytes) {
    return Promise.reject(tooLarge());
  }
  const reservation = budget?.reserve(declared ?? 0, declared);
  if (budget !== undefined && reservation === undefined) {
    return Promise.reject(overloaded(budget));
  }
  return new Promise((resolve, reject) => {
    // With a declared length the body is copied into one buffer of that size as it arrives (its
    // pages are taken as they are written): collecting chunks and concatenating them would hold
    // the body twice at the end, 74 MiB for the largest.
    const whole = declared === undefined ? undefined : Buffer.allocUnsafe(declared);
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    const fail = (error: AdmissionError): void => {
      // A socket error after the whole body arrived is the review's business, not the body's.
      if (ended) return;
      ended = true;
      req.off('data', onData);
      reservation?.release();
      reject(error);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBodyBytes) {
        fail(tooLarge());
        return;
      }
      if (whole !== undefined) {
        // Node's parser never passes more than Content-Length on as body.
        chunk.copy(whole, size - chunk.length);
        return;
      }
      if (reservation !== undefined && budget !== undefined && !reservation.grow(chunk.length)) {
        fail(overloaded(budget));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      if (ended) return;
      ended = true;
      const body = whole === undefined ? Buffer.concat(chunks, size) : size === whole.length ? whole : whole.subarray(0, size);
      resolve({ body, reservation });
    });
    // A client that goes away mid-body: Node emits 'error' (ECONNRESET) on the request; one cut
    // off by the request timeout is destroyed, which ends in 'close' without 'end'.
    req.once('error', () => {
      fail(new AdmissionError('MalformedJSON', 'request body was cut short'));
    });
    req.once('close', () => {
      if (!req.complete) fail(new AdmissionError('MalformedJSON', 'request body was cut short'));
    });
  });
}

function tooLarge(): AdmissionError {
  return new AdmissionError('BodyTooLarge', `request body is larger than the limit of ${mebibytes(maxBodyBytes)}`);
}

function overloaded(budget: BodyBudget): AdmissionError {
  return new AdmissionError(
    'Overloaded',
    `the webhook already holds as many request bodies as its memory allows (${mebibytes(budget.capacityBytes)}); retry`,
  );
}

/**
 * The review's deadline: kube-apiserver sends its remaining time as `?timeout=<n>s` (the webhook's
 * timeoutSeconds, rounded up to whole seconds), after which it no longer waits for the answer.
 * Without one, 10 s, admissionregistration/v1's default timeoutSeconds; at most 30 s, its maximum.
 */
export function reviewTimeoutMs(url: string): number {
  const query = url.indexOf('?');
  const timeout = query === -1 ? null : new URLSearchParams(url.slice(query + 1)).get('timeout');
  // Go's Duration.String() of whole seconds: "5s", "30s", "1m0s". Anchored, no nested repetition.
  const match = timeout === null ? null : /^(?:(\d{1,2})m)?(\d{1,2})s$/.exec(timeout);
  if (match === null) return 10_000;
  const seconds = Number(match[1] ?? 0) * 60 + Number(match[2]);
  return Math.min(30, Math.max(1, seconds)) * 1000;
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
  const smallBodyBytes = deps.smallBodyBytes ?? defaultSmallBodyBytes;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const arrived = deps.now();
    checkHeaders(req);
    const { body, reservation } = await readBody(req, deps.bodyBudget);
    try {
      const started = deps.now();
      // A large body moves to a worker (and is gone from here), a small one is decided here.
      const offloaded = deps.offload !== undefined && body.length > smallBodyBytes;
      const { payload, summary } =
        deps.offload !== undefined && offloaded
          ? await deps.offload.review(side, body, arrived + reviewTimeoutMs(req.url ?? ''))
          : await answerReview(side, body, deps.pipeline);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
      res.end(payload);
      if (summary.event !== undefined && deps.recordEvent !== undefined) deps.recordEvent(summary.event);

      const seconds = (deps.now() - started) / 1000;
      deps.metrics.reviews.inc({
        webhook: side,
        operation: summary.operation,
        plugin: summary.plugins.at(-1) ?? 'none',
        decision: summary.decision,
      });
      deps.metrics.reviewDuration.observe({ webhook: side }, seconds);
      if (deps.logger.isLevelEnabled('info')) {
        deps.logger.info(
          {
            webhook: side,
            uid: summary.uid,
            kind: summary.kind,
            namespace: summary.namespace,
            name: summary.name,
            operation: summary.operation,
            dryRun: summary.dryRun,
            decision: summary.decision,
            plugins: summary.plugins,
            deniedBy: summary.deniedBy,
            patchOperations: summary.patchOperations,
            responseBytes: payload.length,
            durationMs: Math.round(seconds * 1e6) / 1e3,
            ...(offloaded ? { worker: true } : {}),
          },
          'admission review',
        );
      }
    } finally {
      reservation?.release();
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
      if (error instanceof AdmissionError && error.code === 'Overloaded') {
        // Answered at once: waiting for the rest of the body is what a client holding the
        // budget with slow bodies wants. The API server may see a reset instead of the 503;
        // either is a failed call, and its failurePolicy applies.
        closeAfterAnswer(req, res);
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

/**
 * The rest of a refused body is not read: the connection closes after the answer, and what is
 * still in flight drains into nothing meanwhile, for at most a second (closing at once could
 * reset the connection before the client has read the answer; draining for as long as a client
 * likes to send would let it hold the connection).
 */
function closeAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('connection', 'close');
  req.resume();
  res.once('finish', () => {
    const linger = setTimeout(() => {
      req.socket.destroy();
    }, 1_000);
    linger.unref();
    req.socket.once('close', () => {
      clearTimeout(linger);
    });
  });
}

/** The one place an error becomes an answer: a Status body with the error's HTTP code. */
function sendError(error: unknown, path: string, res: ServerResponse, deps: AppDependencies): void {
  const status = toStatusBody(error);
  if (error instanceof AdmissionError && status.code === 500) {
    // Known not to have decided (past its deadline, its worker died): counted and logged as
    // undecided, with a message of our own on the wire.
    deps.metrics.undecidedReviews.inc();
    deps.logger.error({ path: clipText(path), code: status.code, reason: error.code, message: status.message }, 'could not decide');
  } else if (error instanceof AdmissionError) {
    deps.metrics.rejectedRequests.inc({ code: String(status.code) });
    deps.logger.warn({ path: clipText(path), code: status.code, reason: error.code, message: status.message }, 'request refused');
  } else {
    // Only here does an error's text go anywhere: to the log, never onto the wire.
    deps.metrics.undecidedReviews.inc();
    deps.logger.error({ err: error, path: clipText(path) }, 'could not decide');
  }
  if (res.headersSent) {
    return;
  }
  const payload = JSON.stringify(status);
  res.writeHead(status.code, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
    // client-go (which the API server calls webhooks with) retries a 429 or 5xx that carries
    // Retry-After after that many seconds, up to 10 times within the webhook's timeout. 1 s, its
    // smallest value: room in the budget comes back as reviews are answered, in well under a second.
    ...(status.code === 503 ? { 'retry-after': '1' } : {}),
  });
  res.end(payload);
}
