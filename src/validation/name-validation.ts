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
 *
 * The formats are checked by hand-written scans that accept exactly what upstream's regular
 * expressions accept (test/validation/name-validation.test.ts compares them). JavaScript's engine
 * backtracks on these patterns: past 50,000 backtracks the process flag
 * `--enable-experimental-regexp-engine-on-excessive-backtracks` switches to the linear engine,
 * which took about 2 µs a character, so a 3 MiB toleration key cost 6 s; a scan costs nanoseconds.
 */

/** content.EmptyError. */
function emptyError(): string {
  return 'must be non-empty';
}

/**
 * content.MaxLenError. The word is "bytes" in the content package the v1.35-era tree reads; older
 * apimachinery said "characters" (docs/kubernetes-rules.md#label-and-name-checks: callers should
 * not pin this word).
 */
function maxLenError(length: number): string {
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

/** [a-z0-9] */
function isLowerAlphanumeric(code: number): boolean {
  return (code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39);
}

/** `^dns1123SubdomainFmt$`: dot-separated labels, each of [-a-z0-9], starting and ending with [a-z0-9]. */
function matchesDNS1123Subdomain(value: string): boolean {
  let labelStart = 0;
  for (let i = 0; i <= value.length; i++) {
    const code = i < value.length ? value.charCodeAt(i) : 0x2e;
    if (code === 0x2e) {
      // A label ends here: it must be non-empty and end as it starts, alphanumeric.
      if (i === labelStart || !isLowerAlphanumeric(value.charCodeAt(labelStart)) || !isLowerAlphanumeric(value.charCodeAt(i - 1))) {
        return false;
      }
      labelStart = i + 1;
    } else if (!isLowerAlphanumeric(code) && code !== 0x2d) {
      return false;
    }
  }
  return true;
}

/** content.IsDNS1123Subdomain: the length message (if any), then the format message (if any). */
export function isDNS1123Subdomain(value: string): string[] {
  const errors: string[] = [];
  if (utf8Length(value) > dns1123SubdomainMaxLength) {
    errors.push(maxLenError(dns1123SubdomainMaxLength));
  }
  if (!matchesDNS1123Subdomain(value)) {
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

/** [A-Za-z0-9] */
function isAlphanumeric(code: number): boolean {
  return isLowerAlphanumeric(code) || (code >= 0x41 && code <= 0x5a);
}

/** `^labelKeyFmt$`: non-empty, of [-A-Za-z0-9_.], starting and ending with [A-Za-z0-9]. */
function matchesLabelKey(value: string): boolean {
  if (value.length === 0 || !isAlphanumeric(value.charCodeAt(0)) || !isAlphanumeric(value.charCodeAt(value.length - 1))) {
    return false;
  }
  for (let i = 1; i < value.length - 1; i++) {
    const code = value.charCodeAt(i);
    // '-', '_' and '.'
    if (!isAlphanumeric(code) && code !== 0x2d && code !== 0x5f && code !== 0x2e) {
      return false;
    }
  }
  return true;
}

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
  if (!matchesLabelKey(name)) {
    errors.push(`name part ${regexError(labelKeyErrMsg, labelKeyFmt, 'MyName', 'my.name', '123-abc')}`);
  }
  return errors;
}

/**
 * Whether `isQualifiedName(value)` has no error, without building any message: for a caller that
 * asks about many names only yes or no (ExtendedResourceToleration's, of every resource a pod names).
 */
export function isValidQualifiedName(value: string): boolean {
  const slash = value.indexOf('/');
  let name = value;
  if (slash >= 0) {
    if (value.indexOf('/', slash + 1) >= 0) return false;
    const prefix = value.slice(0, slash);
    if (prefix.length === 0 || utf8Length(prefix) > dns1123SubdomainMaxLength || !matchesDNS1123Subdomain(prefix)) return false;
    name = value.slice(slash + 1);
  }
  return name.length > 0 && utf8Length(name) <= labelKeyMaxLength && matchesLabelKey(name);
}

const labelValueFmt = `(${labelKeyFmt})?`;
const labelValueErrMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/** content.LabelValueMaxLength. */
const labelValueMaxLength = 63;

/** content.IsLabelValue (= validation.IsValidLabelValue): the length message, then the format message. */
export function isValidLabelValue(value: string): string[] {
  const errors: string[] = [];
  if (utf8Length(value) > labelValueMaxLength) {
    errors.push(maxLenError(labelValueMaxLength));
  }
  // `^(labelKeyFmt)?$`: empty, or a label key's name part.
  if (value !== '' && !matchesLabelKey(value)) {
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
  // By UTF-16 unit, without a string per character: every key and value is measured.
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x80) {
      bytes += 1;
    } else if (code < 0x800) {
      bytes += 2;
    } else if (code >= 0xd800 && code <= 0xdbff && i + 1 < value.length && (value.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair: one code point above U+FFFF, 4 bytes.
      bytes += 4;
      i++;
    } else {
      bytes += 3;
    }
  }
  return bytes;
}
