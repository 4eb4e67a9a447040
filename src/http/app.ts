/**
 * The express application: routes, body reading and the one error handler. It never listens;
 * src/http/tls-server.ts serves it and tests drive it with supertest.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Logger } from 'pino';
import { AdmissionError, fromBodyParserError, toStatusBody } from '../admission/errors.js';
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

export interface Readiness {
  /** Whether this replica should receive reviews, and if not, why. */
  check(): { ready: boolean; reasons: readonly string[] };
}

export interface AppDependencies {
  readonly pipeline: Pipeline;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly readiness: Readiness;
  /** Monotonic milliseconds, for review durations. */
  readonly now: () => number;
}

export function createApp(deps: AppDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  const readBody = express.raw({ type: () => true, limit: maxBodyBytes });
  app.post('/mutate', readBody, reviewHandler('mutate', deps));
  app.post('/validate', readBody, reviewHandler('validate', deps));
  app.all(['/mutate', '/validate'], (_req, _res, next) => {
    next(new AdmissionError('MethodNotAllowed', 'reviews are sent with POST'));
  });

  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok');
  });
  app.get('/readyz', (_req, res) => {
    const { ready, reasons } = deps.readiness.check();
    res.status(ready ? 200 : 503).type('text/plain').send(ready ? 'ok' : `not ready: ${reasons.join('; ')}`);
  });
  app.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });

  app.use((_req: Request, _res: Response, next: NextFunction) => {
    next(new AdmissionError('NotFound', 'no such path; the webhook serves POST /mutate and POST /validate'));
  });
  app.use(errorHandler(deps));
  return app;
}

function reviewHandler(side: WebhookSide, deps: AppDependencies) {
  return async (req: Request, res: Response): Promise<void> => {
    const started = deps.now();
    if (!req.is('application/json')) {
      throw new AdmissionError('UnsupportedMediaType', `Content-Type must be application/json, got ${JSON.stringify(req.get('content-type') ?? '')}`);
    }
    const body: unknown = req.body;
    const parsed = parseAdmissionReview(Buffer.isBuffer(body) ? body : Buffer.alloc(0));
    const { decision, trace } = await deps.pipeline.review(parsed, [side]);
    const review = buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision);
    const payload = JSON.stringify(review);
    res.type('application/json').send(payload);

    const seconds = (deps.now() - started) / 1000;
    const decisionLabel = decision.allowed ? (review.response.patch === undefined ? 'allowed' : 'patched') : 'denied';
    const attributes = parsed.attributes;
    deps.metrics.reviews.inc({ webhook: side, operation: attributes.operation, plugin: trace.plugins.at(-1) ?? 'none', decision: decisionLabel });
    deps.metrics.reviewDuration.observe({ webhook: side }, seconds);
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
  };
}

function errorHandler(deps: AppDependencies) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const known = error instanceof AdmissionError ? error : fromBodyParserError(error);
    const status = toStatusBody(known ?? error);
    if (known === undefined) {
      // Only here does an error's text go anywhere: to the log, never onto the wire.
      deps.logger.error({ err: error, path: req.path }, 'could not decide');
    } else {
      deps.metrics.rejectedRequests.inc({ code: String(status.code) });
      deps.logger.warn({ path: req.path, code: status.code, reason: known.code, message: known.message }, 'request refused');
    }
    if (res.headersSent) {
      return;
    }
    res.status(status.code).type('application/json').send(JSON.stringify(status));
  };
}
