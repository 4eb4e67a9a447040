/**
 * Go's notion of white space, for the places where kube-apiserver trims a string the tenant or the
 * operator wrote (a quantity, a label selector's key and value) with strings.TrimSpace.
 */

/**
 * unicode.IsSpace, what strings.TrimSpace strips: ASCII \t \n \v \f \r and space, U+0085, U+00A0,
 * and the Unicode White_Space characters above Latin-1. Not JavaScript's trim(), which also strips
 * U+FEFF and leaves U+0085. Every one is a single UTF-16 unit.
 */
function isGoSpace(code: number): boolean {
  return (
    (code >= 0x09 && code <= 0x0d) ||
    code === 0x20 ||
    code === 0x85 ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000
  );
}

/**
 * strings.TrimSpace. A loop, not a regular expression: `/\s+$/`-style patterns restart at every
 * space and scan the whole run each time, so `1` followed by 50,000 spaces and `x` took 3 s.
 */
export function goTrimSpace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isGoSpace(text.charCodeAt(start))) start++;
  while (end > start && isGoSpace(text.charCodeAt(end - 1))) end--;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

/**
 * strings.ToLower: each code point by its simple lowercase mapping (unicode.ToLower). JavaScript's
 * toLowerCase() uses the full mapping, which differs in two ways Go does not know: U+0130 (İ)
 * becomes two code points (i and U+0307) where Go gives `i`, and a final Σ becomes ς by context.
 * Lowering one code point at a time removes the context; U+0130 is the one unconditional full
 * mapping longer than its simple one (SpecialCasing.txt), so it is mapped by hand.
 */
export function goToLower(text: string): string {
  // An ASCII string lowers alike either way (Go's own fast path).
  let ascii = true;
  for (let index = 0; index < text.length && ascii; index++) ascii = text.charCodeAt(index) < 0x80;
  if (ascii) return text.toLowerCase();
  let lowered = '';
  for (const character of text) lowered += character === '\u0130' ? 'i' : character.toLowerCase();
  return lowered;
}
