/**
 * Field errors as k8s.io/apimachinery/pkg/util/validation/field renders them, so a denial reads
 * exactly like the API server's own `Pod "x" is invalid: spec.tolerations[0].value: Invalid value: …`.
 */
import { goBackslashEscapes } from '../api/go-json.js';
import { clipText, goJsonBytes, maxQuotedChars } from '../api/text-bounds.js';

/** The cause types of apimachinery's field.ErrorType; they appear as `details.causes[].reason`. */
export type FieldErrorType =
  | 'FieldValueNotFound'
  | 'FieldValueRequired'
  | 'FieldValueDuplicate'
  | 'FieldValueInvalid'
  | 'FieldValueNotSupported'
  | 'FieldValueForbidden'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'InternalError';

/** The words each type prints before its value (field.ErrorType.String()). */
const typeWords: Record<FieldErrorType, string> = {
  FieldValueNotFound: 'Not found',
  FieldValueRequired: 'Required value',
  FieldValueDuplicate: 'Duplicate value',
  FieldValueInvalid: 'Invalid value',
  FieldValueNotSupported: 'Unsupported value',
  FieldValueForbidden: 'Forbidden',
  FieldValueTooLong: 'Too long',
  FieldValueTooMany: 'Too many',
  InternalError: 'Internal error',
};

/** Types whose body never shows the bad value (ErrorBody's first cases). */
const valueless = new Set<FieldErrorType>(['FieldValueRequired', 'FieldValueForbidden', 'FieldValueTooLong', 'InternalError']);

export interface FieldError {
  readonly type: FieldErrorType;
  /** The path as apimachinery prints it: `spec.tolerations[0].operator`. */
  readonly field: string;
  readonly badValue?: unknown;
  readonly detail: string;
}

/**
 * How many field errors a list keeps; the rest are counted. Upstream keeps every one, and a 3 MiB
 * pod of a million empty tolerations has a million: building them took 70 s and 2 GB of heap, for
 * a denial of 350 MB (bench/RESULTS.md). Each rendered error is at least about 64 bytes (the
 * shortest, `spec.tolerations[0].effect: Unsupported value: …`, with its cause beside it in
 * `details.causes`), so 1,000 already fill 64 KiB: more could not be shown in a bounded denial.
 */
export const maxFieldErrors = 1_000;

/**
 * field.ErrorList, bounded: the first `limit` errors in upstream's order, and how many more there
 * were. A caller asks `keeps()` before it builds an error, `if (errors.keeps()) errors.add(…)`, so
 * an error past the limit is counted without a path, a message or a closure being made for it.
 */
export class FieldErrorList {
  readonly errors: FieldError[] = [];
  /** Errors found past the limit, not kept. */
  omitted = 0;

  constructor(readonly limit: number = maxFieldErrors) {}

  /** Whether the next error is kept; when it is not, it is counted here. */
  keeps(): boolean {
    if (this.errors.length < this.limit) return true;
    this.omitted++;
    return false;
  }

  /** Adds an error `keeps()` said is kept. */
  add(error: FieldError): void {
    this.errors.push(error);
  }

  get empty(): boolean {
    return this.errors.length === 0 && this.omitted === 0;
  }
}

export function invalid(field: string, badValue: unknown, detail: string): FieldError {
  return { type: 'FieldValueInvalid', field, badValue, detail };
}

/** field.NotSupported: the detail lists the valid values, each Go-quoted. */
export function notSupported(field: string, badValue: unknown, validValues: readonly string[]): FieldError {
  const detail = validValues.length > 0 ? `supported values: ${validValues.map(goQuote).join(', ')}` : '';
  return { type: 'FieldValueNotSupported', field, badValue, detail };
}

export function forbidden(field: string, detail: string): FieldError {
  return { type: 'FieldValueForbidden', field, detail };
}

export function required(field: string, detail: string): FieldError {
  return { type: 'FieldValueRequired', field, detail };
}

/** field.Error.ErrorBody(): the type's words, the value (strings Go-quoted), then `: detail`. */
export function errorBody(error: FieldError): string {
  let body = typeWords[error.type];
  if (!valueless.has(error.type)) {
    body += `: ${printValue(error.badValue)}`;
  }
  if (error.detail.length > 0) {
    body += `: ${error.detail}`;
  }
  return body;
}

/** field.Error.Error(): `<field>: <body>`. */
export function errorMessage(error: FieldError): string {
  return `${error.field}: ${errorBody(error)}`;
}

/**
 * The longest aggregate message by default, in bytes as kube-apiserver encodes it: the 32 KiB of
 * the message the Status keeps (src/admission/status.ts, which passes what its prefix leaves).
 */
export const maxAggregateBytes = 32 * 1024;

/** Room for the count that ends a message cut short: `, and 9999999999 more errors]`. */
const moreErrorsBytes = ', and 9999999999 more errors]'.length;

/**
 * ErrorList.ToAggregate().Error(): one error prints alone; several print as `[e1, e2]`,
 * deduplicated by their exact text (an UPDATE validates tolerations twice upstream). Upstream
 * joins every error; here the errors that would take the text past `maxBytes` (as kube-apiserver
 * encodes it) are counted instead (`…, and 41 more errors]`), so that the text costs what it
 * shows. Only the errors shown are rendered: the rest are told apart by type, field, detail and
 * bad value, which is what their texts are made of.
 */
export function aggregateMessage(errors: readonly FieldError[], maxBytes: number = maxAggregateBytes): string {
  const distinct = distinctErrors(errors);
  if (distinct.length === 1) {
    return errorMessage(distinct[0] as FieldError);
  }
  const shown: string[] = [];
  let bytes = 1;
  for (const [i, error] of distinct.entries()) {
    const message = errorMessage(error);
    const size = (i > 0 ? 2 : 0) + goJsonBytes(message, maxBytes);
    const room = i === distinct.length - 1 ? maxBytes - 1 : maxBytes - moreErrorsBytes;
    if (i > 0 && bytes + size > room) {
      return `[${shown.join(', ')}, and ${distinct.length - i} more errors]`;
    }
    shown.push(message);
    bytes += size;
  }
  return `[${shown.join(', ')}]`;
}

/**
 * The errors whose texts differ, first of each in order. Two errors print alike exactly when
 * their type, field, detail and printed value are alike; errors are grouped by the first three,
 * and within a group (the few errors of one field) compared by value: strings by themselves (a
 * string prints as its quoted self, so equal strings are the only ones that print alike, the
 * U+FFFD a lone surrogate prints as aside), other values by their printed form.
 */
export function distinctErrors(errors: readonly FieldError[]): FieldError[] {
  const groups = new Map<string, FieldError[]>();
  const distinct: FieldError[] = [];
  for (const error of errors) {
    const key = `${error.type}\u0000${error.field}\u0000${error.detail}`;
    const group = groups.get(key);
    if (group === undefined) {
      groups.set(key, [error]);
      distinct.push(error);
    } else if (!group.some((seen) => printsAlike(seen.badValue, error.badValue))) {
      group.push(error);
      distinct.push(error);
    }
  }
  return distinct;
}

function printsAlike(a: unknown, b: unknown): boolean {
  if (typeof a === 'string' && typeof b === 'string') {
    return a === b;
  }
  return printValue(a) === printValue(b);
}

/**
 * %q or %v of the bad value, as ErrorBody prints it. A string longer than maxQuotedChars (only a
 * value built to be long: no valid one comes near) is clipped first, with a count of what was
 * left out, so a 3 MiB key costs a kilobyte of message, not three megabytes per error.
 */
function printValue(value: unknown): string {
  if (value === undefined || value === null) {
    // ErrorBody swaps a nil value for the string "null" and then prints it with %q.
    return '"null"';
  }
  if (typeof value === 'string') {
    return goQuote(clipText(value, maxQuotedChars));
  }
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  return clipText(JSON.stringify(value), maxQuotedChars);
}

const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/**
 * Go's strconv.Quote (what `%q` prints): backslash escapes for quotes and control characters,
 * `\xNN` below U+0080, `\uNNNN`/`\UNNNNNNNN` for other non-printable code points.
 *
 * Characters written as they are go out as slices of the input, not one concatenation each: a
 * bad value can be megabytes long (a toleration key), and a string built a character at a time
 * cost about 150 ns a character in allocation and collection, and more as it grew.
 */
export function goQuote(value: string): string {
  const parts: string[] = ['"'];
  let plainFrom = 0;
  let i = 0;
  while (i < value.length) {
    const code = value.codePointAt(i) ?? 0;
    const width = code > 0xffff ? 2 : 1;
    const escaped = quotedCharacter(code, value, i, width);
    if (escaped !== undefined) {
      if (plainFrom < i) {
        parts.push(value.slice(plainFrom, i));
      }
      parts.push(escaped);
      plainFrom = i + width;
    }
    i += width;
  }
  parts.push(value.slice(plainFrom), '"');
  return parts.join('');
}

/** strconv.Quote of each ASCII character: undefined for the printable ones, written as they are. */
const asciiQuoted: readonly (string | undefined)[] = Array.from({ length: 0x80 }, (_, code) => {
  if (code === 0x22) {
    return '\\"';
  }
  if (Object.hasOwn(goBackslashEscapes, code)) {
    return goBackslashEscapes[code];
  }
  // Space to tilde is printable (letters, digits, punctuation and symbols); the rest, C0 and DEL, is not.
  return code >= 0x20 && code < 0x7f ? undefined : `\\x${code.toString(16).padStart(2, '0')}`;
});

/** How strconv.Quote writes the code point at `value[i]`, or undefined when it is written as it is. */
function quotedCharacter(code: number, value: string, i: number, width: number): string | undefined {
  if (code < 0x80) {
    return asciiQuoted[code];
  }
  if (code >= 0xd800 && code <= 0xdfff) {
    // A lone surrogate cannot be UTF-8; Go's JSON decoder turns it into U+FFFD.
    return '\uFFFD';
  }
  if (printable.test(value.slice(i, i + width))) {
    return undefined;
  }
  if (code < 0x10000) {
    return `\\u${code.toString(16).padStart(4, '0')}`;
  }
  return `\\U${code.toString(16).padStart(8, '0')}`;
}
