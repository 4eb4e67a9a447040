/**
 * Bounds on the text tolerator writes: denials, warnings and audit annotations. Much of that text
 * quotes the object, and a tenant chooses the object: a 3 MiB value, 20,000 ORed node selector
 * terms, 100,000 invalid tolerations. kube-apiserver copies a webhook's denial into its response
 * and into every audit event of the request, and bounds none of it (errors.NewInvalid builds one
 * cause per field error, ErrorList.ToAggregate joins them all). So every list is spelled out up
 * to a count and the rest counted, every string copied from the object is clipped with a count of
 * what was left out, and the response as a whole is bounded in bytes (src/admission/response.ts).
 * Each function costs in proportion to what it shows, not to what it is given.
 */

/**
 * How many items of one list a message spells out before it counts the rest: the number the
 * plugins and the audit already use for violations and missing labels (violationsSpelledOut,
 * missingShown, itemsSpelledOut): enough to see the pattern, short of copying the list.
 */
export const listedItems = 10;

/**
 * The longest string of the object copied whole into a message: four times the longest valid
 * string a toleration, label or selector holds (a qualified name: 253 + 1 + 63 = 317 characters),
 * so any value a person typed reads whole, and only a value built to be long is clipped.
 */
export const maxQuotedChars = 1_024;

/**
 * The most bytes one item of a response takes (a cause's message or field, a warning, an audit
 * annotation's value): the 4,096 characters of warnings kube-apiserver passes on whole
 * (truncateAtTotalRunes, k8s.io/apiserver/pkg/endpoints/filters/warning.go), so that one long
 * item never crowds out the others.
 */
export const maxItemBytes = 4 * 1024;

/** `text`, or its first `max` characters followed by a marker of how many were left out. */
export function clipText(text: string, max: number = maxQuotedChars): string {
  if (text.length <= max) {
    return text;
  }
  const end = cutBefore(text, max);
  return `${text.slice(0, end)}…(${text.length - end} more characters)`;
}

/** `max`, or one less when `max` would cut a surrogate pair in two (half a character is no UTF-8). */
function cutBefore(text: string, max: number): number {
  const last = text.charCodeAt(max - 1);
  return last >= 0xd800 && last <= 0xdbff ? max - 1 : max;
}

/**
 * The first `listedItems` of `items`, each rendered by `render`, joined with `separator`, then
 * `and N more` (with `noun` when given) for the rest. Exactly `items.map(render).join(separator)`
 * when there are no more. Renders only what it shows.
 */
export function spellOut<T>(
  items: readonly T[],
  render: (item: T) => string,
  separator: string,
  noun = '',
  shown: number = listedItems,
): string {
  const parts: string[] = [];
  for (let i = 0; i < items.length && i < shown; i++) {
    parts.push(render(items[i] as T));
  }
  const listed = parts.join(separator);
  if (items.length <= shown) {
    return listed;
  }
  const more = `and ${items.length - shown} more${noun === '' ? '' : ` ${noun}`}`;
  return separator.trim() === ',' ? `${listed} ${more}` : `${listed}${separator}${more}`;
}

/**
 * The bytes `text` takes inside a JSON string as kube-apiserver writes it (Go's encoding/json,
 * which escapes `<`, `>` and `&` as `\u003c`…, control characters and U+2028/U+2029 as `\uXXXX`
 * or their short escapes, `"` and `\` with a backslash, and writes the rest as UTF-8), quotes
 * left out. Stops counting once past `stopAt`.
 */
export function goJsonBytes(text: string, stopAt = Number.POSITIVE_INFINITY): number {
  let bytes = 0;
  for (let i = 0; i < text.length && bytes <= stopAt; i++) {
    bytes += unitBytes(text, i);
  }
  return bytes;
}

/** Bytes of the UTF-16 unit at `i` in Go's JSON (a surrogate pair: 2 each, 4 in all). */
function unitBytes(text: string, i: number): number {
  const code = text.charCodeAt(i);
  if (code < 0x80) {
    if (code === 0x22 || code === 0x5c || code === 0x0a || code === 0x0d || code === 0x09) return 2;
    if (code < 0x20 || code === 0x3c || code === 0x3e || code === 0x26) return 6;
    return 1;
  }
  if (code < 0x800) return 2;
  if (code === 0x2028 || code === 0x2029) return 6;
  if (code >= 0xd800 && code <= 0xdbff) {
    const next = text.charCodeAt(i + 1);
    // A lone surrogate is not UTF-8: Go writes U+FFFD (3 bytes) in its place.
    return next >= 0xdc00 && next <= 0xdfff ? 2 : 3;
  }
  if (code >= 0xdc00 && code <= 0xdfff) {
    const previous = text.charCodeAt(i - 1);
    return previous >= 0xd800 && previous <= 0xdbff ? 2 : 3;
  }
  return 3;
}

/** The most bytes the marker `…(N more characters)` takes: `…` is 3 bytes, N at most 16 digits. */
export const clipMarkerBytes = 3 + '(9999999999999999 more characters)'.length;

/**
 * `text`, or its longest prefix whose Go JSON bytes, with the marker of how many characters were
 * left out, are at most `maxBytes`. Costs O(maxBytes): no character takes less than a byte, so
 * the scan never goes further than that.
 */
export function clipToBytes(text: string, maxBytes: number): string {
  // Six bytes is the most a UTF-16 unit takes: a text that short cannot exceed the bound.
  if (text.length * 6 <= maxBytes || goJsonBytes(text, maxBytes) <= maxBytes) {
    return text;
  }
  const room = Math.max(0, maxBytes - clipMarkerBytes);
  let bytes = 0;
  let end = 0;
  while (end < text.length) {
    const next = unitBytes(text, end);
    if (bytes + next > room) break;
    bytes += next;
    end++;
  }
  end = end > 0 ? cutBefore(text, end) : 0;
  return `${text.slice(0, end)}…(${text.length - end} more characters)`;
}
