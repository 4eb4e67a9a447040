/**
 * The two integer checks behind the `Gt` and `Lt` operators (KEP-5471), both byte-exact:
 * apimachinery's `content.IsDecimalInteger` (canonical form) and Go's `strconv.ParseInt(s, 10, 64)`
 * (range and syntax, with Go's error text; src/api/go-strconv.ts). Values are compared as BigInt: no floating point
 * ever touches a 64-bit value.
 */
import { parseInt64 } from '../api/go-strconv.js';

/**
 * content.IsDecimalInteger: `0`, or an optional `-` followed by a non-zero ASCII digit and more
 * ASCII digits. Returns the error messages (none when valid). Not bounded to int64.
 */
export function isDecimalInteger(value: string): string[] {
  if (value.length === 0) {
    return ['must be non-empty'];
  }
  return /^(0|-?[1-9][0-9]*)$/.test(value) ? [] : ['must be a valid decimal integer in canonical form'];
}

/** A value both checks accept: what matching requires of each side of a `Gt`/`Lt` comparison. */
export function parseCanonicalInt64(value: string): bigint | undefined {
  if (isDecimalInteger(value).length > 0) {
    return undefined;
  }
  return parseInt64(value).value;
}
