/**
 * One review from its bytes to its answer: parse the AdmissionReview, run the pipeline on the
 * sides asked for, build the response. Every way of running reviews goes through `runReview`: the
 * HTTP app for small bodies and the review workers for large ones (both through
 * src/admission/answer-review.ts, which adds the body's structure bound and the summary for the log line
 * and metrics), and `tolerator review`, which runs both sides as the API server calls them. A new
 * way to decide reviews away from the accepting thread (a pool, a batch) implements
 * `ReviewRunner`, which the HTTP app takes.
 */
import { clipText } from '../api/text-bounds.js';
import { admissionEventFor, type EventIntent } from '../events/event-intents.js';
import type { PluginName } from '../plugins/plugin.js';
import type { Pipeline, ReviewTrace, WebhookSide } from './pipeline.js';
import { buildAdmissionResponse, type AdmissionDecision, type AdmissionReviewResponse } from './response.js';
import { denialStatus } from './status.js';
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
  const patchJson =
    decision.allowed && decision.patch !== undefined && decision.patch.length > 0 ? JSON.stringify(decision.patch) : undefined;
  if (patchJson !== undefined) {
    const patchBytes = Buffer.byteLength(patchJson);
    const allowed = maxPatchBytes(body.byteLength);
    if (patchBytes > allowed) {
      const denied = amplificationDenial(patchBytes, allowed, body.byteLength);
      return { parsed, decision: denied, trace, response: buildAdmissionResponse(parsed.apiVersion, parsed.uid, denied) };
    }
  }
  return { parsed, decision, trace, response: buildAdmissionResponse(parsed.apiVersion, parsed.uid, decision, patchJson) };
}

/**
 * The most bytes of JSON Patch a review is answered with: 64 KiB and twice its body.
 *
 * kube-apiserver decodes the patch, applies it and copies it into the audit event of the request
 * (the annotation `patch.webhook.admission.k8s.io/round_N_index_M`, at level Request and above),
 * bounding none of it; the answer on the wire is a third larger (base64). A patch re-sends what
 * it adds and what it replaces, so it is about the size of the changed parts of the object: the
 * plugins add a few tolerations and one requirement per node selector term, which for any term
 * a person writes is about the size of the term itself, so the patch stays within twice the body
 * (measured, test/admission/answer-amplification.test.ts: a tenant pod of a thousand terms
 * `zone In [zone-i]`, 1.5 times it; terms of one `Exists` expression on a short key, 1.9 times it
 * with the shipped groups' requirement). Terms built to be smaller than the requirement, such
 * as 149,796 `{"matchFields":[{}]}` in 3 MiB (invalid, and denied by the API server's validation
 * after the mutating webhooks), made 4.5 times the body: 14 MB of patch, a 19 MB answer.
 *
 * 64 KiB: what any small review may be answered with whatever its shape, the bound docs/plugins.md
 * gives every answer's text. The patch's shape does not help: a `replace` of all terms re-sends
 * each term and its new requirement, per-term `add` operations would each also carry a path of
 * about 100 bytes (and are bounded to 1,000 operations, src/admission/json-patch-diff.ts).
 */
export function maxPatchBytes(bodyBytes: number): number {
  return 64 * 1024 + 2 * bodyBytes;
}

/**
 * The answer to a review whose patch would exceed maxPatchBytes: denied, 403, saying why. The
 * mutation cannot be sent, and a pod without it (a tenant pod without its group's requirement)
 * is what the validating webhook denies anyway; a denial says so at once and in so many words.
 */
function amplificationDenial(patchBytes: number, allowedBytes: number, bodyBytes: number): AdmissionDecision {
  return {
    allowed: false,
    status: denialStatus({
      reason: 'Forbidden',
      message: `tolerator does not send this answer: the patch would be ${patchBytes} bytes, more than the ${allowedBytes} this review allows (64 KiB and twice its ${bodyBytes} bytes); the object holds many small parts each of which the mutation grows (node selector terms, tolerations), so write fewer of them`,
    }),
  };
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
  /** The Event this answer produces with `serve --emit-events` (src/events/event-intents.ts), written on the main thread. */
  readonly event?: EventIntent | undefined;
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
    event: decision.allowed ? undefined : admissionEventFor(attributes, { allowed: false, message: decision.status?.message }),
  };
}

export interface ReviewAnswer {
  /** The AdmissionReview answer, as JSON text. */
  readonly payload: string;
  readonly summary: ReviewSummary;
}

/** A way to decide one webhook's reviews: inline (src/admission/answer-review.ts) or on worker threads (src/server/review-pool.ts). */
export interface ReviewRunner {
  /**
   * Answers a review as `answerReview` would, by `deadline` (in the caller's monotonic
   * milliseconds) or not at all: rejects with an AdmissionError (the body's own 4xx, or 500 once
   * the deadline has passed or the worker deciding it died), or with any other error (could not decide).
   */
  review(side: WebhookSide, body: Buffer, deadline: number): Promise<ReviewAnswer>;
}
