/**
 * One review from its bytes to its answer: parse the AdmissionReview, run the pipeline on the
 * sides asked for, build the response. Every way of running reviews goes through `runReview`: the
 * HTTP app for small bodies and the review workers for large ones (both through
 * src/http/answer.ts, which adds the transport's structure bound and the summary for the log line
 * and metrics), and `tolerator review`, which runs both sides as the API server calls them. A new
 * way to decide reviews away from the accepting thread (a pool, a batch) implements
 * `ReviewRunner`, which the HTTP app takes.
 */
import { clipText } from '../api/text-bounds.js';
import type { PluginName } from '../plugins/plugin.js';
import type { Pipeline, ReviewTrace, WebhookSide } from './pipeline.js';
import { buildAdmissionResponse, type AdmissionDecision, type AdmissionReviewResponse } from './response.js';
import { parseAdmissionReview, type ParsedReview } from './review.js';

export interface ReviewRun {
  readonly parsed: ParsedReview;
  readonly decision: AdmissionDecision;
  readonly trace: ReviewTrace;
  /** The AdmissionReview answer, as an object. */
  readonly response: AdmissionReviewResponse;
}

/**
 * Runs one review. An unreadable review throws the AdmissionError the server answers with (its
 * 4xx); a plugin that cannot decide throws any other error (500).
 */
export async function runReview(pipeline: Pipeline, body: Uint8Array, sides: readonly WebhookSide[]): Promise<ReviewRun> {
  const parsed = parseAdmissionReview(body);
  const { decision, trace } = await pipeline.review(parsed, sides);
  return { parsed, decision, trace, response: buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision) };
}

/** What the log line and the metrics say about a review: never the object itself. */
export interface ReviewSummary {
  readonly uid: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly operation: string;
  readonly dryRun: boolean;
  readonly decision: 'allowed' | 'patched' | 'denied';
  readonly plugins: readonly PluginName[];
  readonly deniedBy: PluginName | undefined;
  readonly patchOperations: number;
}

/**
 * The summary's strings come from the review, whoever sent it: a megabyte name or namespace (the
 * API server validates names only after the mutating webhooks) is clipped to maxQuotedChars, as
 * any text quoting an object is, so that no log line is longer than the rest of it.
 */
export function summarizeReview({ parsed, decision, trace, response }: ReviewRun): ReviewSummary {
  const attributes = parsed.attributes;
  return {
    uid: clipText(parsed.uid),
    kind: clipText(attributes.kind.kind),
    namespace: clipText(attributes.namespace),
    name: clipText(attributes.name),
    operation: attributes.operation,
    dryRun: attributes.dryRun,
    decision: decision.allowed ? (response.response.patch === undefined ? 'allowed' : 'patched') : 'denied',
    plugins: trace.plugins,
    deniedBy: trace.deniedBy,
    patchOperations: decision.patch?.length ?? 0,
  };
}

export interface ReviewAnswer {
  /** The AdmissionReview answer, as JSON text. */
  readonly payload: string;
  readonly summary: ReviewSummary;
}

/** A way to decide one webhook's reviews: inline (src/http/answer.ts) or on worker threads (src/server/review-pool.ts). */
export interface ReviewRunner {
  /**
   * Answers a review as `answerReview` would, by `deadline` (in the caller's monotonic
   * milliseconds) or not at all: rejects with an AdmissionError (the body's own 4xx, or 500 once
   * the deadline has passed or the worker deciding it died), or with any other error (could not decide).
   */
  review(side: WebhookSide, body: Buffer, deadline: number): Promise<ReviewAnswer>;
}
