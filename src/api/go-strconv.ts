/**
 * Go's strconv.ParseInt(s, 10, 64), the one parse of an int64 written as text: the `Gt`/`Lt`
 * values of tolerations and of node selector requirements, and wherever else upstream calls it.
 * Byte-exact (syntax, range, Go's error text); values are BigInt, so no floating point ever
 * touches a 64-bit value.
 */
import { goQuote } from '../validation/field-errors.js';
import { clipText } from './text-bounds.js';

/** int64 bounds: -2^63 and 2^63 - 1. */
export const int64Min = -(2n ** 63n);
export const int64Max = 2n ** 63n - 1n;

export type ParseIntResult =
  | { readonly value: bigint; readonly error?: undefined }
  /** `reason` is Go's error kind (strconv.ErrSyntax or strconv.ErrRange), for a caller with its own words. */
  | { readonly value?: undefined; readonly error: string; readonly reason: 'syntax' | 'range' };

/**
 * strconv.ParseInt(s, 10, 64) with Go's semantics and messages: an optional sign, ASCII digits
 * (leading zeros, `+5` and `-0` accepted), and the first problem met left to right decides the
 * error, as in Go's loop: an overflow seen before a bad character is a range error.
 */
export function parseInt64(input: string): ParseIntResult {
  // Built only when returned: quoting the input costs a pass over it, and matching calls this for
  // every Gt/Lt toleration against every taint, valid values included. Go quotes the whole input;
  // one built to be long is clipped (text-bounds.ts), so a 3 MiB value costs a kilobyte of message.
  const quoted = (): string => goQuote(clipText(input));
  const syntaxError = (): ParseIntResult => ({ error: `strconv.ParseInt: parsing ${quoted()}: invalid syntax`, reason: 'syntax' });
  const rangeError = (): ParseIntResult => ({ error: `strconv.ParseInt: parsing ${quoted()}: value out of range`, reason: 'range' });
  if (input.length === 0) {
    return syntaxError();
  }
  let digits = input;
  let negative = false;
  if (input.startsWith('+') || input.startsWith('-')) {
    negative = input.startsWith('-');
    digits = input.slice(1);
    if (digits.length === 0) {
      return syntaxError();
    }
  }
  // ParseUint accumulates into a uint64 and reports overflow at the digit that causes it. Leading
  // zeros add nothing and cannot overflow: they are stepped over without BigInt arithmetic (a
  // quarter of the time for a value of 3 million zeros, which SchedulingWarnings parses per node).
  const uint64Max = 2n ** 64n - 1n;
  let magnitude = 0n;
  let start = 0;
  while (start < digits.length && digits.charCodeAt(start) === 0x30) {
    start++;
  }
  for (let i = start; i < digits.length; i++) {
    const code = digits.charCodeAt(i);
    if (code < 0x30 || code > 0x39) {
      return syntaxError();
    }
    magnitude = magnitude * 10n + BigInt(code - 0x30);
    if (magnitude > uint64Max) {
      return rangeError();
    }
  }
  if (!negative && magnitude > int64Max) {
    return rangeError();
  }
  if (negative && magnitude > -int64Min) {
    return rangeError();
  }
  return { value: negative ? -magnitude : magnitude };
}
