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
 */
import { aggregateMessage, errorBody } from '../validation/field-errors.js';
import type { Denial } from '../plugins/plugin.js';
import { goQuote } from '../validation/field-errors.js';

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
      return { metadata: {}, status: 'Failure', message: denial.message, reason: 'Forbidden', code: 403 };
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
      message,
      reason: 'Forbidden',
      details: { ...(name === '' ? {} : { name }), ...(group === '' ? {} : { group }), kind: resource },
      code: 403,
    };
  }
  // schema.GroupKind.String(): `Kind` for the core group, `Kind.group` otherwise.
  const qualifiedKind = denial.group === '' ? denial.kind : `${denial.kind}.${denial.group}`;
  // Past maxFieldErrors the rest are only counted (src/validation/field-errors.ts); upstream lists all.
  const omitted = denial.omittedErrors ?? 0;
  const more = omitted > 0 ? ` (and ${omitted} more field errors, not listed)` : '';
  const message =
    denial.errors.length === 0
      ? `${qualifiedKind} ${goQuote(denial.name)} is invalid${more}`
      : `${qualifiedKind} ${goQuote(denial.name)} is invalid: ${aggregateMessage(denial.errors)}${more}`;
  return {
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Invalid',
    details: {
      name: denial.name,
      ...(denial.group === '' ? {} : { group: denial.group }),
      kind: denial.kind,
      causes: denial.errors.map((error) => ({ reason: error.type, message: errorBody(error), field: error.field })),
    },
    code: 422,
  };
}
