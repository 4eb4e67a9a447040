/**
 * The one error type of the admission layer and its catalogue. Every request the webhook cannot
 * even read is answered from here, with a stable code, an HTTP status and a message that says
 * exactly what was wrong. Decisions about well-formed requests are never errors: they are
 * values (see src/plugins/plugin.ts `Denial`).
 *
 * | what happened                                  | HTTP | why that status                                  |
 * |------------------------------------------------|------|--------------------------------------------------|
 * | body is not JSON / not an AdmissionReview      | 400  | the client sent something we cannot read          |
 * | body larger than the limit                     | 413  | RFC 9110 "Content Too Large"                      |
 * | Content-Type is not application/json           | 415  | RFC 9110 "Unsupported Media Type"                 |
 * | a review past its deadline, a worker that died | 500  | "could not decide": the failurePolicy applies     |
 * | no room for the body in flight                 | 503  | overloaded, with Retry-After: the API server's    |
 * |                                                |      | client retries after it, within its timeout       |
 *
 * A 4xx or 5xx is never a denial: kube-apiserver treats any non-200 answer as a failed call and applies
 * the webhook's failurePolicy, which is what must happen when the request itself is broken.
 */
import { clipToBytes, maxItemBytes } from '../api/text-bounds.js';

export type AdmissionErrorCode =
  | 'MalformedJSON'
  | 'InvalidEncoding'
  | 'NestingTooDeep'
  | 'NotAdmissionReview'
  | 'UnsupportedVersion'
  | 'MissingRequest'
  | 'MissingUID'
  | 'InvalidField'
  | 'BodyTooLarge'
  | 'EmptyBody'
  | 'UnsupportedMediaType'
  | 'RequestTimeout'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'CouldNotDecide'
  | 'Overloaded';

const httpStatusOf: Record<AdmissionErrorCode, number> = {
  MalformedJSON: 400,
  InvalidEncoding: 400,
  NestingTooDeep: 400,
  NotAdmissionReview: 400,
  UnsupportedVersion: 400,
  MissingRequest: 400,
  MissingUID: 400,
  InvalidField: 400,
  EmptyBody: 400,
  BodyTooLarge: 413,
  UnsupportedMediaType: 415,
  RequestTimeout: 408,
  NotFound: 404,
  MethodNotAllowed: 405,
  CouldNotDecide: 500,
  Overloaded: 503,
};

/** metav1.StatusReason for each HTTP status we use. */
const reasonOf: Record<number, string> = {
  400: 'BadRequest',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  408: 'Timeout',
  413: 'RequestEntityTooLarge',
  415: 'UnsupportedMediaType',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

export class AdmissionError extends Error {
  readonly code: AdmissionErrorCode;
  readonly httpStatus: number;

  constructor(code: AdmissionErrorCode, message: string) {
    super(message);
    this.name = 'AdmissionError';
    this.code = code;
    this.httpStatus = httpStatusOf[code];
  }
}

/** The metav1.Status body sent with a non-200 answer; kube-apiserver decodes it as the call's error. */
export interface StatusBody {
  readonly apiVersion: 'v1';
  readonly kind: 'Status';
  readonly metadata: Record<string, never>;
  readonly status: 'Failure';
  readonly message: string;
  readonly reason: string;
  readonly code: number;
}

/**
 * Maps anything thrown to a status. Unknown errors become a 500 with a generic message: their
 * text may hold object contents or internals, so it goes to the log, never onto the wire. A
 * refusal's message quotes what was wrong, clipped where it is made (src/admission/review.ts);
 * here it is bounded as a whole to maxItemBytes, the most any one item of an answer takes
 * (src/api/text-bounds.ts), whatever a future message quotes.
 */
export function toStatusBody(error: unknown): StatusBody {
  const known = error instanceof AdmissionError ? error : undefined;
  const code = known?.httpStatus ?? 500;
  const message =
    known === undefined ? 'internal error: the webhook could not decide; see its log' : clipToBytes(known.message, maxItemBytes);
  return { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Failure', message, reason: reasonOf[code] ?? 'InternalError', code };
}
