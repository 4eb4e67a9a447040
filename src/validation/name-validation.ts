/**
 * The name and label checks of k8s.io/apimachinery, with their exact messages:
 * `content.IsLabelKey` (what `validation.IsQualifiedName` points to), `content.IsLabelValue`
 * (`validation.IsValidLabelValue`), `content.IsDNS1123Subdomain`, and the message builders
 * `EmptyError`, `MaxLenError` and `RegexError` (staging/src/k8s.io/apimachinery/pkg/api/validate/content/).
 *
 * Each check returns the list of messages, empty when the value is valid, as upstream does; callers
 * turn every message into its own field error.
 *
 * Lengths are UTF-8 byte counts because Go's `len(string)` counts bytes. The regular expressions
 * only admit ASCII, so a byte-wise and a code-unit-wise match agree.
 */

/** content.EmptyError. */
export function emptyError(): string {
  return 'must be non-empty';
}

/**
 * content.MaxLenError. The word is "bytes" in the content package the v1.35-era tree reads; older
 * apimachinery said "characters" (k8s-semantics §4 and §10: callers should not pin this word).
 */
export function maxLenError(length: number): string {
  return `must be no more than ${length} bytes`;
}

/**
 * content.RegexError. Each example is followed by `', '` and joined with `' or '`, which gives the
 * double space upstream prints: `(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used …)`.
 */
export function regexError(message: string, regex: string, ...examples: string[]): string {
  if (examples.length === 0) {
    return `${message} (regex used for validation is '${regex}')`;
  }
  let out = `${message} (e.g. `;
  examples.forEach((example, i) => {
    if (i > 0) {
      out += ' or ';
    }
    out += `'${example}', `;
  });
  return `${out}regex used for validation is '${regex}')`;
}

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123SubdomainErrorMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
/** RFC 1123 caps a DNS name at 253 octets (content.DNS1123SubdomainMaxLength). */
const dns1123SubdomainMaxLength = 253;
const dns1123SubdomainRegexp = new RegExp(`^${dns1123SubdomainFmt}$`);

/** content.IsDNS1123Subdomain: the length message (if any), then the format message (if any). */
export function isDNS1123Subdomain(value: string): string[] {
  const errors: string[] = [];
  if (utf8Length(value) > dns1123SubdomainMaxLength) {
    errors.push(maxLenError(dns1123SubdomainMaxLength));
  }
  if (!dns1123SubdomainRegexp.test(value)) {
    errors.push(regexError(dns1123SubdomainErrorMsg, dns1123SubdomainFmt, 'example.com'));
  }
  return errors;
}

const labelKeyCharFmt = '[A-Za-z0-9]';
const labelKeyExtCharFmt = '[-A-Za-z0-9_.]';
const labelKeyFmt = `(${labelKeyCharFmt}${labelKeyExtCharFmt}*)?${labelKeyCharFmt}`;
const labelKeyErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/** The name part of a label key, like a DNS label, is at most 63 bytes (content.labelKeyMaxLength). */
const labelKeyMaxLength = 63;
const labelKeyRegexp = new RegExp(`^${labelKeyFmt}$`);

/**
 * content.IsLabelKey (= validation.IsQualifiedName): an optional DNS-1123 subdomain prefix and `/`,
 * then a name of at most 63 bytes. More than one `/` gives a single message and nothing else;
 * otherwise the prefix messages come first, then the name's length and format messages (an empty
 * name fails both "non-empty" and the format).
 */
export function isQualifiedName(value: string): string[] {
  const errors: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0] ?? '';
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) {
      errors.push(`prefix part ${emptyError()}`);
    } else {
      errors.push(...isDNS1123Subdomain(prefix).map((message) => `prefix part ${message}`));
    }
  } else {
    return [
      `a valid label key ${regexError(labelKeyErrMsg, labelKeyFmt, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) {
    errors.push(`name part ${emptyError()}`);
  } else if (utf8Length(name) > labelKeyMaxLength) {
    errors.push(`name part ${maxLenError(labelKeyMaxLength)}`);
  }
  if (!labelKeyRegexp.test(name)) {
    errors.push(`name part ${regexError(labelKeyErrMsg, labelKeyFmt, 'MyName', 'my.name', '123-abc')}`);
  }
  return errors;
}

const labelValueFmt = `(${labelKeyFmt})?`;
const labelValueErrMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/** content.LabelValueMaxLength. */
export const labelValueMaxLength = 63;
const labelValueRegexp = new RegExp(`^${labelValueFmt}$`);

/** content.IsLabelValue (= validation.IsValidLabelValue): the length message, then the format message. */
export function isValidLabelValue(value: string): string[] {
  const errors: string[] = [];
  if (utf8Length(value) > labelValueMaxLength) {
    errors.push(maxLenError(labelValueMaxLength));
  }
  if (!labelValueRegexp.test(value)) {
    errors.push(regexError(labelValueErrMsg, labelValueFmt, 'MyValue', 'my_value', '12345'));
  }
  return errors;
}

/**
 * Go's len(): the UTF-8 byte count. A lone surrogate counts 3 bytes, as the U+FFFD that Go's JSON
 * decoder puts in its place.
 */
export function utf8Length(value: string): number {
  let bytes = 0;
  for (const char of value) {
    const code = char.codePointAt(0) ?? 0;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
  }
  return bytes;
}
