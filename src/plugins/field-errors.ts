/**
 * Field errors as k8s.io/apimachinery/pkg/util/validation/field renders them, so a denial reads
 * exactly like the API server's own `Pod "x" is invalid: spec.tolerations[0].value: Invalid value: …`.
 */

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
 * ErrorList.ToAggregate().Error(): one error prints alone; several print as `[e1, e2]`,
 * deduplicated by their exact text (an UPDATE validates tolerations twice upstream).
 */
export function aggregateMessage(errors: readonly FieldError[]): string {
  const messages = [...new Set(errors.map(errorMessage))];
  if (messages.length === 1) {
    return messages[0] ?? '';
  }
  return `[${messages.join(', ')}]`;
}

function printValue(value: unknown): string {
  if (value === undefined || value === null) {
    // ErrorBody swaps a nil value for the string "null" and then prints it with %q.
    return '"null"';
  }
  if (typeof value === 'string') {
    return goQuote(value);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value);
  }
  return JSON.stringify(value);
}

const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/**
 * Go's strconv.Quote (what `%q` prints): backslash escapes for quotes and control characters,
 * `\xNN` below U+0080, `\uNNNN`/`\UNNNNNNNN` for other non-printable code points.
 */
export function goQuote(value: string): string {
  let out = '"';
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    switch (char) {
      case '"': out += '\\"'; continue;
      case '\\': out += '\\\\'; continue;
      case '\u0007': out += '\\a'; continue;
      case '\b': out += '\\b'; continue;
      case '\f': out += '\\f'; continue;
      case '\n': out += '\\n'; continue;
      case '\r': out += '\\r'; continue;
      case '\t': out += '\\t'; continue;
      case '\v': out += '\\v'; continue;
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      // A lone surrogate cannot be UTF-8; Go's JSON decoder turns it into U+FFFD.
      out += '\uFFFD';
    } else if (printable.test(char)) {
      out += char;
    } else if (code < 0x80) {
      out += `\\x${code.toString(16).padStart(2, '0')}`;
    } else if (code < 0x10000) {
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    } else {
      out += `\\U${code.toString(16).padStart(8, '0')}`;
    }
  }
  return `${out}"`;
}
