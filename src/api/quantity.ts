/**
 * Kubernetes `resource.Quantity` values, parsed and compared exactly
 * (staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go `ParseQuantity`,
 * `UnmarshalJSON`, and suffix.go `interpret`).
 *
 * A quantity is held as `coefficient × 10^exponent` with a BigInt coefficient: no floating point
 * touches a value, so `1` = `1000m`, `0.5` = `500m`, `1Gi` = `1073741824` and `1G` ≠ `1Gi`.
 * The exponent is kept apart (rather than expanded into one BigInt) because a valid quantity such
 * as `1e2000000000` would otherwise need two billion digits.
 *
 * Grammar accepted, as upstream's scanner (not the looser regular expression in its error text):
 *   [+-]? digits? ( '.' digits? )? suffix
 *   suffix: '' | n u m k M G T P E (powers of ten) | Ki Mi Gi Ti Pi Ei (powers of two)
 *         | (e|E) followed by what strconv.ParseInt(s, 10, 64) accepts (the decimal exponent)
 * Quirks kept: the number part may be empty or a lone `.` (`Ki`, `.`, `+`, `-`, `m` parse as 0,
 * but `Pi`, `Ei` and `e-10` without a digit are rejected, see below); `E` alone is exa while `E5`
 * is an exponent; a bare `e` is invalid; the exponent wraps like Go's int32(int64) conversion.
 * Not reproduced: upstream's further int32 arithmetic on the scale, which can wrap only for
 * exponents within 18 of ±2^31.
 */
import { goTrimSpace } from './go-strings.js';

/** The value `coefficient × 10^exponent`, normalised so that equal values have equal fields. */
export interface Quantity {
  readonly coefficient: bigint;
  readonly exponent: number;
}

export const zeroQuantity: Quantity = { coefficient: 0n, exponent: 0 };

/**
 * Every parsed quantity is rounded up (away from zero) to a multiple of 10^-9: upstream's
 * `amount.Round(amount, Nano.infScale(), inf.RoundUp)`, "if you want some resources, you should
 * get some resources". So `0.1n` is `1n`.
 */
const nanoExponent = -9;

/** BinarySI values are capped at 2^63 - 1 in magnitude (`maxAllowed`); decimal ones are not. */
const binaryCap: Quantity = normalise(2n ** 63n - 1n, 0);

const decimalSuffixes: ReadonlyMap<string, number> = new Map([
  ['n', -9],
  ['u', -6],
  ['m', -3],
  ['', 0],
  ['k', 3],
  ['M', 6],
  ['G', 9],
  ['T', 12],
  ['P', 15],
  ['E', 18],
]);

const binarySuffixes: ReadonlyMap<string, number> = new Map([
  ['Ki', 10],
  ['Mi', 20],
  ['Gi', 30],
  ['Ti', 40],
  ['Pi', 50],
  ['Ei', 60],
]);

/** The letters upstream's scanner lets into a suffix before an optional sign and digits. */
const suffixLetters = 'eEinumkKMGTP';

/**
 * A quantity as it arrives in JSON, the way `Quantity.UnmarshalJSON` reads it: a string is
 * trimmed of surrounding whitespace and parsed; a number is parsed from its JavaScript text.
 * Returns undefined where the API server would reject the value.
 *
 * Not reproducible from a decoded JSON value: Go parses the raw JSON text, so a number's exact
 * digits and an escaped string (`"\u0031"`, rejected by Go) are already lost here. Neither
 * reaches a webhook from kube-apiserver, which re-encodes every quantity as its canonical string.
 */
export function parseQuantity(v: string | number): Quantity | undefined {
  const text = quantityText(v);
  return text === undefined ? undefined : parseQuantityString(text);
}

/**
 * `parseQuantity(v)` is a positive quantity, decided from the text alone. Parsing builds exact
 * BigInt values, whose cost grows faster than the digit count (a million digits took a second),
 * and a hostile pod may write a quantity that long; this costs one pass over the text. A valid
 * quantity is positive exactly when it has no minus sign and a non-zero digit: rounding up to
 * 10^-9 keeps any non-zero value non-zero, and the binary cap and the exponent's int32
 * wrap-around never change a sign.
 */
export function isPositiveQuantity(v: string | number): boolean {
  const text = quantityText(v);
  const read = text === undefined ? undefined : readQuantity(text);
  if (read === undefined) {
    return false;
  }
  const { negative, whole, fraction } = read.scanned;
  // `whole` has lost its leading zeros, so any digit left in it is non-zero.
  return !negative && (whole.length > 0 || /[1-9]/.test(fraction));
}

/** The text Quantity.UnmarshalJSON parses: a string trimmed, a finite number as JavaScript prints it. */
function quantityText(v: string | number): string | undefined {
  if (typeof v === 'number') {
    return Number.isFinite(v) ? String(v) : undefined;
  }
  return goTrimSpace(v);
}

/** What a suffix scales the number by. */
type Scale = { readonly kind: 'decimal'; readonly exponent: number } | { readonly kind: 'binary'; readonly power: number };

/**
 * The scanned parts and the suffix's meaning, or undefined where upstream refuses the string:
 * everything ParseQuantity decides before any arithmetic, in one pass over the text.
 */
function readQuantity(str: string): { readonly scanned: ScannedQuantity; readonly scale: Scale } | undefined {
  const scanned = scanQuantity(str);
  if (scanned === undefined) {
    return undefined;
  }
  const { suffix } = scanned;
  const decimal = decimalSuffixes.get(suffix);
  if (decimal !== undefined) {
    return { scanned, scale: { kind: 'decimal', exponent: decimal } };
  }
  const binary = binarySuffixes.get(suffix);
  if (binary !== undefined) {
    // Upstream's int64 fast path estimates its precision as 15 - len(num) - ⌊exponent·3/10⌋ - 1,
    // with num = "0" for a digitless number; below 0 (Pi, Ei) it falls back to
    // inf.Dec.SetString, which needs a digit: `Ki` is zero while `Pi` is rejected.
    if (!scanned.hasDigit && 15 - 1 - Math.trunc((binary * 3) / 10) - 1 < 0) {
      return undefined;
    }
    return { scanned, scale: { kind: 'binary', power: binary } };
  }
  if (suffix.length > 1 && (suffix.startsWith('e') || suffix.startsWith('E'))) {
    const parsed = parseGoInt64(suffix.slice(1));
    if (parsed === undefined) {
      return undefined;
    }
    // Upstream converts the int64 with int32(parsed), which wraps modulo 2^32.
    const exponent = Number(BigInt.asIntN(32, parsed));
    // Below nano upstream leaves its int64 fast path for inf.Dec.SetString, which needs a digit:
    // `.e-10` is rejected while `.e-9` and `0e-10` are zero.
    if (!scanned.hasDigit && exponent < nanoExponent) {
      return undefined;
    }
    return { scanned, scale: { kind: 'decimal', exponent } };
  }
  return undefined;
}

/**
 * resource.ParseQuantity on a string, byte for byte: no trimming. Exact, so its BigInt arithmetic
 * grows faster than the number of digits; the review path only asks isPositiveQuantity.
 */
export function parseQuantityString(str: string): Quantity | undefined {
  const read = readQuantity(str);
  if (read === undefined) {
    return undefined;
  }
  const { negative, whole, fraction } = read.scanned;
  const digits = BigInt(whole + fraction);
  const signed = negative ? -digits : digits;
  if (read.scale.kind === 'decimal') {
    return roundUpToNano(signed, read.scale.exponent - fraction.length);
  }
  const rounded = roundUpToNano(signed * 2n ** BigInt(read.scale.power), -fraction.length);
  return capMagnitude(rounded, binaryCap);
}

/**
 * Whether strconv.ParseInt(s, 10, 64) succeeds, and its value: an optional sign, then one or more
 * ASCII digits (leading zeros allowed), within [-2^63, 2^63 - 1]. Kept here rather than shared
 * with the toleration code so that api/ depends on nothing else in the project.
 */
function parseGoInt64(text: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(text)) {
    return undefined;
  }
  // Past 19 significant digits nothing fits in an int64: answered from the length, since BigInt
  // would spend time superlinear in a hostile exponent's length (`1e000…001` is a valid one).
  const sign = text.startsWith('-') ? '-' : '';
  const significant = text.replace(/^[+-]?0*/, '');
  if (significant.length > 19) {
    return undefined;
  }
  const value = BigInt(`${sign}${significant === '' ? '0' : significant}`);
  return value >= -(2n ** 63n) && value <= 2n ** 63n - 1n ? value : undefined;
}

interface ScannedQuantity {
  readonly negative: boolean;
  /** Integer digits without leading zeros (may be empty). */
  readonly whole: string;
  /** Fraction digits (may be empty). */
  readonly fraction: string;
  readonly suffix: string;
  /** Whether the number part had any digit at all, leading zeros included. */
  readonly hasDigit: boolean;
}

/** parseQuantityString: the scanner that splits sign, digits, fraction and suffix. */
function scanQuantity(str: string): ScannedQuantity | undefined {
  if (str.length === 0) {
    return undefined;
  }
  const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  let pos = 0;
  let negative = false;
  if (str[0] === '-' || str[0] === '+') {
    negative = str[0] === '-';
    pos++;
  }
  const zeroesStart = pos;
  while (str[pos] === '0') {
    pos++;
  }
  const hadZeroes = pos > zeroesStart;
  const wholeStart = pos;
  while (isDigit(str[pos])) {
    pos++;
  }
  const whole = str.slice(wholeStart, pos);
  let fraction = '';
  if (str[pos] === '.') {
    pos++;
    const fractionStart = pos;
    while (isDigit(str[pos])) {
      pos++;
    }
    fraction = str.slice(fractionStart, pos);
  }
  const suffixStart = pos;
  while (pos < str.length && suffixLetters.includes(str[pos] ?? '')) {
    pos++;
  }
  if (str[pos] === '-' || str[pos] === '+') {
    pos++;
  }
  while (isDigit(str[pos])) {
    pos++;
  }
  if (pos < str.length) {
    // A character that fits nowhere: ErrFormatWrong.
    return undefined;
  }
  return { negative, whole, fraction, suffix: str.slice(suffixStart), hasDigit: hadZeroes || whole.length > 0 || fraction.length > 0 };
}

/** coefficient × 10^exponent rounded away from zero to a multiple of 10^-9, normalised. */
function roundUpToNano(coefficient: bigint, exponent: number): Quantity {
  if (coefficient === 0n || exponent >= nanoExponent) {
    return normalise(coefficient, exponent);
  }
  const negative = coefficient < 0n;
  const magnitude = negative ? -coefficient : coefficient;
  const shift = nanoExponent - exponent;
  // A magnitude with fewer digits than the shift is below 10^-9 and rounds up to exactly 1n;
  // testing the length first avoids building 10^shift for exponents like e-2000000000.
  let rounded: bigint;
  if (magnitude.toString().length < shift) {
    rounded = 1n;
  } else {
    const divisor = 10n ** BigInt(shift);
    rounded = magnitude / divisor + (magnitude % divisor === 0n ? 0n : 1n);
  }
  return normalise(negative ? -rounded : rounded, nanoExponent);
}

function capMagnitude(q: Quantity, cap: Quantity): Quantity {
  if (q.coefficient >= 0n) {
    return compareQuantities(q, cap) > 0 ? cap : q;
  }
  const negativeCap = { coefficient: -cap.coefficient, exponent: cap.exponent };
  return compareQuantities(q, negativeCap) < 0 ? negativeCap : q;
}

/** Moves trailing zeros of the coefficient into the exponent; zero is always {0n, 0}. */
function normalise(coefficient: bigint, exponent: number): Quantity {
  if (coefficient === 0n) {
    return zeroQuantity;
  }
  const text = coefficient.toString();
  // Counted by a loop: `/0+$/` restarts at every zero and scans the run each time, so a coefficient
  // 1, 50,000 zeros, 1 took 3 s.
  let end = text.length;
  while (text.charCodeAt(end - 1) === 0x30) end--;
  const zeros = text.length - end;
  return zeros === 0 ? { coefficient, exponent } : { coefficient: BigInt(text.slice(0, end)), exponent: exponent + zeros };
}

function digitCount(coefficient: bigint): number {
  return (coefficient < 0n ? -coefficient : coefficient).toString().length;
}

/** Quantity.Cmp. Magnitudes are ordered by digit count + exponent before any digits are aligned. */
export function compareQuantities(a: Quantity, b: Quantity): -1 | 0 | 1 {
  const signA = signOf(a.coefficient);
  const signB = signOf(b.coefficient);
  if (signA !== signB) {
    return signA < signB ? -1 : 1;
  }
  if (signA === 0) {
    return 0;
  }
  // Same non-zero sign. Normalised coefficients have no trailing zeros, so the position of the
  // leading digit (digit count + exponent) orders the magnitudes when it differs.
  const leadA = digitCount(a.coefficient) + a.exponent;
  const leadB = digitCount(b.coefficient) + b.exponent;
  let magnitudeOrder: number;
  if (leadA !== leadB) {
    magnitudeOrder = leadA < leadB ? -1 : 1;
  } else {
    // Same leading position: the exponents differ by less than a digit count, so aligning is cheap.
    const exponent = Math.min(a.exponent, b.exponent);
    const alignedA = abs(a.coefficient) * 10n ** BigInt(a.exponent - exponent);
    const alignedB = abs(b.coefficient) * 10n ** BigInt(b.exponent - exponent);
    magnitudeOrder = alignedA === alignedB ? 0 : alignedA < alignedB ? -1 : 1;
  }
  const order = signA > 0 ? magnitudeOrder : -magnitudeOrder;
  return order < 0 ? -1 : order > 0 ? 1 : 0;
}

function signOf(n: bigint): -1 | 0 | 1 {
  return n > 0n ? 1 : n < 0n ? -1 : 0;
}

function abs(n: bigint): bigint {
  return n < 0n ? -n : n;
}

/**
 * Whether an exact sum may be built: adding 1 to 1e2000000000 needs two billion digits, which
 * upstream's inf.Dec would also materialise. Beyond this many digits of alignment the sum throws
 * (a "could not decide", answered as HTTP 500) rather than stall the event loop. One million
 * digits is far beyond any real resource quantity (2^63 has 19) and still aligns in milliseconds.
 */
export const maxAlignmentDigits = 1_000_000;

/** Quantity.Add, exactly. Throws RangeError when the terms are more than maxAlignmentDigits apart. */
export function addQuantities(a: Quantity, b: Quantity): Quantity {
  if (a.coefficient === 0n) {
    return b;
  }
  if (b.coefficient === 0n) {
    return a;
  }
  const exponent = Math.min(a.exponent, b.exponent);
  const spread = Math.max(a.exponent, b.exponent) - exponent;
  if (spread > maxAlignmentDigits) {
    throw new RangeError(`adding quantities 10^${spread} apart needs more than ${maxAlignmentDigits} digits`);
  }
  const alignedA = a.coefficient * 10n ** BigInt(a.exponent - exponent);
  const alignedB = b.coefficient * 10n ** BigInt(b.exponent - exponent);
  return normalise(alignedA + alignedB, exponent);
}

/** Quantity.Sign() > 0, i.e. `quantity.Cmp(zeroQuantity) == 1`. */
export function isPositive(q: Quantity): boolean {
  return q.coefficient > 0n;
}
