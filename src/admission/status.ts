/**
 * Denials mapped to the metav1.Status the API server itself would have written, in one place.
 *
 * | denial              | code | reason    | message                                   | from upstream          |
 * |---------------------|------|-----------|-------------------------------------------|------------------------|
 * | Invalid (fields)    | 422  | Invalid   | `Pod "name" is invalid: <aggregate>`      | errors.NewInvalid      |
 * | Forbidden (policy)  | 403  | Forbidden | the plugin's message                      | a plain error          |
 * | Forbidden (object)  | 403  | Forbidden | `pods "name" is forbidden: <message>`     | errors.NewForbidden    |
 *
 * The API server prefixes the message with `admission webhook "<name>" denied the request: `.
 *
 * Bounded here, where the Status is built (the rest of the response's text is bounded in
 * response.ts): kube-apiserver copies the Status into its answer and into every audit event of
 * the request and bounds none of it, and upstream's NewInvalid writes one cause per field error,
 * so a pod of 100,000 invalid tolerations would carry megabytes. The message is at most
 * `statusTextBytes.message` bytes as the API server encodes it, the causes at most
 * `statusTextBytes.causes` bytes and `maxCauses` entries, each string at most maxItemBytes, with
 * a last cause that counts those left out. Small denials are exactly upstream's.
 */
import { clipToBytes, goJsonBytes, maxItemBytes } from '../api/text-bounds.js';
import { aggregateMessage, errorBody, type FieldError } from '../validation/field-errors.js';
import type { Denial } from '../plugins/plugin.js';
import { goQuote } from '../validation/field-errors.js';

/**
 * The Status's share of the 64 KiB of text one response may carry (response.ts): half for the
 * message, which kubectl prints and people read (32 KiB is about 400 terminal lines, more than
 * anyone reads, and holds a hundred field errors of the usual 300 bytes), a quarter for the
 * causes, the same errors again for programs.
 */
export const statusTextBytes = { message: 32 * 1024, causes: 16 * 1024 } as const;

/**
 * The most causes a Status lists (the last of them the count of the rest, when there are more):
 * a toleration earns at most five field errors (upstream's rows), so 100 name twenty tolerations
 * or more, more than anyone fixes in one go; and 100 of the usual 150 bytes fit the causes' bytes.
 */
export const maxCauses = 100;

/**
 * The most bytes of an object's name `details.name` carries: 253, the longest name of an object
 * (a DNS subdomain). The mutating webhook sees an object before the API server validates its
 * name, so a name there may be megabytes long; a real one is never clipped.
 */
const detailsNameBytes = 253;

/** JSON's `{"reason":"","message":"","field":""},` around one cause's three strings. */
const causeOverheadBytes = '{"reason":"","message":"","field":""},'.length;
/** Room kept for the last cause that counts the rest: its overhead, reason and message. */
const noteBytes = causeOverheadBytes + 'FieldValueTooMany'.length + 'and 9999999999 more causes, left out'.length;

export interface StatusCause {
  readonly reason: string;
  readonly message: string;
  readonly field: string;
}

export interface DenialStatus {
  readonly metadata: Record<string, never>;
  readonly status: 'Failure';
  readonly message: string;
  readonly reason: 'Invalid' | 'Forbidden';
  /** metav1.StatusDetails; its fields are omitempty, so an empty name or group is left out. */
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind: string;
    readonly causes?: readonly StatusCause[];
  };
  readonly code: number;
}

export function denialStatus(denial: Denial): DenialStatus {
  if (denial.reason === 'Forbidden') {
    if (denial.object === undefined) {
      return {
        metadata: {},
        status: 'Failure',
        message: clipToBytes(denial.message, statusTextBytes.message),
        reason: 'Forbidden',
        code: 403,
      };
    }
    // errors.NewForbidden: schema.GroupResource.String() is `resource` for the core group,
    // `resource.group` otherwise; an empty name drops the quoted name from the message.
    const { group, resource, name } = denial.object;
    const qualifiedResource = group === '' ? resource : `${resource}.${group}`;
    const message =
      name === ''
        ? `${qualifiedResource} is forbidden: ${denial.message}`
        : `${qualifiedResource} ${goQuote(name)} is forbidden: ${denial.message}`;
    return {
      metadata: {},
      status: 'Failure',
      message: clipToBytes(message, statusTextBytes.message),
      reason: 'Forbidden',
      details: {
        ...(name === '' ? {} : { name: clipToBytes(name, detailsNameBytes) }),
        ...(group === '' ? {} : { group }),
        kind: resource,
      },
      code: 403,
    };
  }
  // schema.GroupKind.String(): `Kind` for the core group, `Kind.group` otherwise.
  const qualifiedKind = denial.group === '' ? denial.kind : `${denial.kind}.${denial.group}`;
  // Past maxFieldErrors the rest are only counted (src/validation/field-errors.ts); upstream lists all.
  const omitted = denial.omittedErrors ?? 0;
  const more = omitted > 0 ? ` (and ${omitted} more field errors, not listed)` : '';
  const invalid = `${qualifiedKind} ${goQuote(denial.name)} is invalid`;
  const message =
    denial.errors.length === 0
      ? `${invalid}${more}`
      : `${invalid}: ${aggregateMessage(denial.errors, statusTextBytes.message - goJsonBytes(invalid) - 2 - goJsonBytes(more))}${more}`;
  return {
    metadata: {},
    status: 'Failure',
    message: clipToBytes(message, statusTextBytes.message),
    reason: 'Invalid',
    details: {
      name: clipToBytes(denial.name, detailsNameBytes),
      ...(denial.group === '' ? {} : { group: denial.group }),
      kind: denial.kind,
      causes: boundedCauses(denial.errors, omitted),
    },
    code: 422,
  };
}

/**
 * errors.NewInvalid's causes, one per field error (duplicates included, as upstream), within
 * maxCauses and statusTextBytes.causes; past either, a last cause `and N more causes, left out`.
 * `omitted` errors were never built (past maxFieldErrors) but are causes all the same: they count
 * among those left out. Renders only the causes it keeps.
 */
function boundedCauses(errors: readonly FieldError[], omitted: number): StatusCause[] {
  const causes: StatusCause[] = [];
  let bytes = 0;
  for (const [i, error] of errors.entries()) {
    const left = errors.length - i + omitted;
    const cause = {
      reason: error.type,
      message: clipToBytes(errorBody(error), maxItemBytes),
      field: clipToBytes(error.field, maxItemBytes),
    };
    const size = causeOverheadBytes + goJsonBytes(cause.reason) + goJsonBytes(cause.message) + goJsonBytes(cause.field);
    // The last cause may use the room kept for the note: no note follows it.
    const room = left === 1 ? statusTextBytes.causes : statusTextBytes.causes - noteBytes;
    if (causes.length === (left === 1 ? maxCauses : maxCauses - 1) || bytes + size > room) {
      causes.push({ reason: 'FieldValueTooMany', message: `and ${left} more causes, left out`, field: '' });
      break;
    }
    causes.push(cause);
    bytes += size;
  }
  if (omitted > 0 && causes.length === errors.length) {
    causes.push({ reason: 'FieldValueTooMany', message: `and ${omitted} more causes, left out`, field: '' });
  }
  return causes;
}
