/**
 * Go's encoding/json decoding into a list of tolerations, in the two forms tolerator needs:
 *
 * - `unmarshalTolerations(text, goPackage)`: `json.Unmarshal([]byte(text), &[]<pkg>.Toleration{})`
 *   with Go's exact error text, for annotations whose parse error is shown to the user: the pod
 *   annotation `scheduler.alpha.kubernetes.io/tolerations` (GetTolerationsFromPodAnnotations,
 *   `[]core.Toleration`) and PodTolerationRestriction's namespace annotations
 *   (extractNSTolerations, `[]v1.Toleration`). Go first scans the whole input for syntax errors
 *   (checkValid), then decodes, keeping only the first type mismatch; both steps are reproduced.
 * - `decodeParsedTolerations(value)`: the same decoding of an already parsed value (a YAML
 *   configuration file), with exact field names as apimachinery's config decoder matches them, and
 *   the first mismatch returned as data so the caller can name where it is.
 *
 * Both give tolerations as the API server serialises them: fields in declaration order, empty
 * strings and a nil tolerationSeconds left out (omitempty), so a decoded toleration reads like one
 * read back from the API server.
 */
import type { Toleration } from '../api/types.js';
import { parseInt64 } from './numeric.js';

/** The Go package whose Toleration type is decoded into: it names the types in error messages. */
export type GoTolerationPackage = 'core' | 'v1';

/**
 * A JSON value that does not fit the Go type it is decoded into, in the words of Go's
 * encoding/json UnmarshalTypeError: `got` is what the JSON held (`object`, `array`, `string`,
 * `number`, `bool`, or `number 1.5` for a number an int64 cannot hold).
 */
export interface TolerationTypeMismatch {
  /** Index of the toleration in the list; absent when the list itself has the wrong type. */
  readonly index?: number;
  /** The field, when a field has the wrong type (absent: the element itself is not an object). */
  readonly field?: keyof Toleration;
  readonly got: string;
}

export type TolerationListDecoding =
  /** `null` for a JSON null (Go's nil slice), else the list. */
  | { readonly tolerations: Toleration[] | null; readonly mismatch?: undefined }
  | { readonly tolerations?: undefined; readonly mismatch: TolerationTypeMismatch };

export type TolerationUnmarshalling =
  /** A JSON null (Go's nil slice) is the empty list: every caller treats the two alike. */
  | { readonly tolerations: Toleration[]; readonly error?: undefined }
  /** Go's error text: a SyntaxError's, or the first UnmarshalTypeError's. */
  | { readonly tolerations?: undefined; readonly error: string };

/** The Go type of each Toleration field, as a type error prints it. */
export function goFieldType(field: keyof Toleration, goPackage: GoTolerationPackage): string {
  switch (field) {
    case 'operator':
      return `${goPackage}.TolerationOperator`;
    case 'effect':
      return `${goPackage}.TaintEffect`;
    case 'tolerationSeconds':
      return 'int64';
    case 'key':
    case 'value':
      return 'string';
  }
}

/** Go's UnmarshalTypeError.Error() for a decode into `[]<goPackage>.Toleration`. */
export function goUnmarshalTypeError(mismatch: TolerationTypeMismatch, goPackage: GoTolerationPackage): string {
  if (mismatch.index === undefined) {
    return `json: cannot unmarshal ${mismatch.got} into Go value of type []${goPackage}.Toleration`;
  }
  if (mismatch.field === undefined) {
    return `json: cannot unmarshal ${mismatch.got} into Go value of type ${goPackage}.Toleration`;
  }
  return `json: cannot unmarshal ${mismatch.got} into Go struct field Toleration.${mismatch.field} of type ${goFieldType(mismatch.field, goPackage)}`;
}

/** json.Unmarshal of `text` into `[]<goPackage>.Toleration`, with Go's error text. */
export function unmarshalTolerations(text: string, goPackage: GoTolerationPackage): TolerationUnmarshalling {
  let root: JsonNode;
  try {
    root = new GoJsonScanner(text).parseDocument();
  } catch (error) {
    if (error instanceof GoJsonSyntaxError) {
      return { error: error.message };
    }
    throw error;
  }
  const decoded = decodeTolerationNodes(root, 'folded');
  if (decoded.mismatch !== undefined) {
    return { error: goUnmarshalTypeError(decoded.mismatch, goPackage) };
  }
  return { tolerations: decoded.tolerations ?? [] };
}

/**
 * The same decoding of an already parsed JSON or YAML value, matching field names exactly (the
 * case-sensitive decoder apimachinery uses for config files). The first mismatch in document
 * order is reported, as Go reports the earliest.
 */
export function decodeParsedTolerations(value: unknown): TolerationListDecoding {
  return decodeTolerationNodes(nodeFromValue(value), 'exact');
}

// ---------------------------------------------------------------------------------------------
// Decoding a JSON tree into tolerations, as encoding/json's decoder walks it.

type JsonNode =
  | { readonly kind: 'null' }
  | { readonly kind: 'bool' }
  | { readonly kind: 'number'; readonly raw: string }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'array'; readonly items: readonly JsonNode[] }
  | { readonly kind: 'object'; readonly entries: readonly (readonly [string, JsonNode])[] };

/**
 * A parsed value as the tree the scanner would have built from its JSON. A number keeps the
 * literal JavaScript prints for it, so one an int64 cannot hold is named as `number 1.5`.
 */
function nodeFromValue(value: unknown): JsonNode {
  if (value === null || value === undefined) return { kind: 'null' };
  if (Array.isArray(value)) return { kind: 'array', items: value.map(nodeFromValue) };
  switch (typeof value) {
    case 'boolean':
      return { kind: 'bool' };
    case 'number':
    case 'bigint':
      return { kind: 'number', raw: String(value) };
    case 'string':
      return { kind: 'string', value };
    default:
      return { kind: 'object', entries: Object.entries(value).map(([key, entry]) => [key, nodeFromValue(entry)] as const) };
  }
}

/** 'folded': encoding/json's matching; 'exact': the case-sensitive matching of config files. */
type FieldMatching = 'folded' | 'exact';

/** Toleration's fields in declaration order, the order the API server serialises them in. */
const tolerationFields = ['key', 'operator', 'value', 'effect', 'tolerationSeconds'] as const;

function decodeTolerationNodes(root: JsonNode, matching: FieldMatching): TolerationListDecoding {
  if (root.kind === 'null') {
    return { tolerations: null };
  }
  if (root.kind !== 'array') {
    return { mismatch: { got: goValueWord(root) } };
  }
  const tolerations: Toleration[] = [];
  for (const [index, item] of root.items.entries()) {
    if (item.kind === 'null') {
      tolerations.push({}); // null leaves the new element at its zero value
      continue;
    }
    if (item.kind !== 'object') {
      return { mismatch: { index, got: goValueWord(item) } };
    }
    const decoded = decodeToleration(item.entries, matching);
    if ('got' in decoded) {
      return { mismatch: { index, ...decoded } };
    }
    tolerations.push(decoded);
  }
  return { tolerations };
}

/**
 * One toleration, fields assigned in document order: unknown keys are skipped, a repeated key
 * overwrites, null leaves a string field as it was and sets tolerationSeconds (a pointer) to nil.
 */
function decodeToleration(
  entries: readonly (readonly [string, JsonNode])[],
  matching: FieldMatching,
): Toleration | { readonly field: keyof Toleration; readonly got: string } {
  const decoded: Toleration = {};
  for (const [key, node] of entries) {
    const field = matchField(key, matching);
    if (field === undefined || node.kind === 'null') {
      if (field === 'tolerationSeconds') {
        decoded.tolerationSeconds = null;
      }
      continue;
    }
    if (field === 'tolerationSeconds') {
      const parsed = node.kind === 'number' ? parseInt64(node.raw) : undefined;
      if (parsed?.value === undefined) {
        // A number that is no int64 (1.5, 1e3, 2^63) is named with its literal.
        return { field, got: node.kind === 'number' ? `number ${node.raw}` : goValueWord(node) };
      }
      decoded.tolerationSeconds = Number(parsed.value);
    } else if (node.kind === 'string') {
      decoded[field] = node.value;
    } else {
      return { field, got: goValueWord(node) };
    }
  }
  return omitEmpty(decoded);
}

/** The toleration in declaration order, without empty strings or a nil tolerationSeconds. */
function omitEmpty(decoded: Toleration): Toleration {
  const toleration: Toleration = {};
  for (const field of tolerationFields) {
    if (field === 'tolerationSeconds') {
      if (typeof decoded.tolerationSeconds === 'number') {
        toleration.tolerationSeconds = decoded.tolerationSeconds;
      }
    } else if (decoded[field] !== undefined && decoded[field] !== '') {
      toleration[field] = decoded[field];
    }
  }
  return toleration;
}

/**
 * Go matches an object key to a field by its exact JSON name, else case-insensitively (foldName:
 * ASCII case, plus the Kelvin sign and long s that fold to k and s).
 */
function matchField(key: string, matching: FieldMatching): (typeof tolerationFields)[number] | undefined {
  const exact = tolerationFields.find((name) => name === key);
  if (exact !== undefined || matching === 'exact') return exact;
  const folded = key.replace(/\u212A/g, 'k').replace(/\u017F/g, 's').toLowerCase();
  return tolerationFields.find((name) => name.toLowerCase() === folded);
}

/** How encoding/json names a JSON value in an UnmarshalTypeError. */
function goValueWord(node: JsonNode): string {
  return node.kind;
}

// ---------------------------------------------------------------------------------------------
// encoding/json's scanner: the accepted language and the SyntaxError texts.

class GoJsonSyntaxError extends Error {}

const unexpectedEnd = 'unexpected end of JSON input';

/** A recursive-descent twin of encoding/json's scanner: same accepted language, same messages. */
class GoJsonScanner {
  private pos = 0;

  constructor(private readonly text: string) {}

  parseDocument(): JsonNode {
    this.skipSpace();
    const node = this.parseValue();
    this.skipSpace();
    if (this.pos < this.text.length) {
      this.fail('after top-level value');
    }
    return node;
  }

  private parseValue(): JsonNode {
    const char = this.peek();
    if (char === '{') return this.parseObject();
    if (char === '[') return this.parseArray();
    if (char === '"') return { kind: 'string', value: this.parseString() };
    if (char === '-' || (char >= '0' && char <= '9')) return { kind: 'number', raw: this.parseNumber() };
    if (char === 't') return this.parseLiteral('true', { kind: 'bool' });
    if (char === 'f') return this.parseLiteral('false', { kind: 'bool' });
    if (char === 'n') return this.parseLiteral('null', { kind: 'null' });
    return this.fail('looking for beginning of value');
  }

  private parseObject(): JsonNode {
    const entries: (readonly [string, JsonNode])[] = [];
    this.parseElements('}', 'after object key:value pair', () => {
      if (this.peek() !== '"') {
        this.fail('looking for beginning of object key string');
      }
      const key = this.parseString();
      this.skipSpace();
      if (this.peek() !== ':') {
        this.fail('after object key');
      }
      this.pos++;
      this.skipSpace();
      entries.push([key, this.parseValue()]);
    });
    return { kind: 'object', entries };
  }

  private parseArray(): JsonNode {
    const items: JsonNode[] = [];
    this.parseElements(']', 'after array element', () => {
      items.push(this.parseValue());
    });
    return { kind: 'array', items };
  }

  /**
   * The elements between the opening bracket at the current position and `close`, separated by
   * commas with optional whitespace; `afterElement` words the error for anything else there.
   */
  private parseElements(close: string, afterElement: string, parseElement: () => void): void {
    this.pos++;
    this.skipSpace();
    if (this.peek() === close) {
      this.pos++;
      return;
    }
    for (;;) {
      parseElement();
      this.skipSpace();
      const next = this.peek();
      if (next === close) {
        this.pos++;
        return;
      }
      if (next !== ',') {
        this.fail(afterElement);
      }
      this.pos++;
      this.skipSpace();
    }
  }

  private parseString(): string {
    const start = this.pos;
    this.pos++;
    for (;;) {
      if (this.pos >= this.text.length) {
        this.fail('in string literal');
      }
      const char = this.peek();
      if (char === '"') {
        this.pos++;
        break;
      }
      if (char === '\\') {
        this.pos++;
        const escape = this.peek();
        if (escape === '') {
          this.fail('in string escape code');
        } else if (escape === 'u') {
          this.pos++;
          for (let i = 0; i < 4; i++) {
            if (!/^[0-9a-fA-F]$/.test(this.peek())) {
              this.fail('in \\u hexadecimal character escape');
            }
            this.pos++;
          }
        } else if ('"\\/bfnrt'.includes(escape)) {
          this.pos++;
        } else {
          this.fail('in string escape code');
        }
      } else if (char.charCodeAt(0) < 0x20) {
        this.fail('in string literal');
      } else {
        this.pos++;
      }
    }
    // The literal is valid JSON now; Go turns unpaired surrogates into U+FFFD.
    const decoded = JSON.parse(this.text.slice(start, this.pos)) as string;
    return decoded.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
  }

  private parseNumber(): string {
    const start = this.pos;
    if (this.peek() === '-') {
      this.pos++;
    }
    if (this.peek() === '0') {
      this.pos++;
    } else if (this.peek() >= '1' && this.peek() <= '9') {
      this.skipDigits();
    } else {
      this.fail('in numeric literal');
    }
    if (this.peek() === '.') {
      this.pos++;
      if (!this.isDigit()) {
        this.fail('after decimal point in numeric literal');
      }
      this.skipDigits();
    }
    if (this.peek() === 'e' || this.peek() === 'E') {
      this.pos++;
      if (this.peek() === '+' || this.peek() === '-') {
        this.pos++;
      }
      if (!this.isDigit()) {
        this.fail('in exponent of numeric literal');
      }
      this.skipDigits();
    }
    return this.text.slice(start, this.pos);
  }

  private parseLiteral(word: string, node: JsonNode): JsonNode {
    for (const expected of word) {
      if (this.peek() !== expected) {
        this.fail(`in literal ${word} (expecting '${expected}')`);
      }
      this.pos++;
    }
    return node;
  }

  private skipDigits(): void {
    while (this.isDigit()) {
      this.pos++;
    }
  }

  private isDigit(): boolean {
    const char = this.peek();
    return char >= '0' && char <= '9';
  }

  /** JSON whitespace only: space, tab, CR, LF. */
  private skipSpace(): void {
    while (' \t\r\n'.includes(this.peek()) && this.pos < this.text.length) {
      this.pos++;
    }
  }

  /** The current UTF-16 unit, or '' at the end. */
  private peek(): string {
    return this.text.charAt(this.pos);
  }

  /** SyntaxError: "invalid character <c> <context>", or the end-of-input message. */
  private fail(context: string): never {
    if (this.pos >= this.text.length) {
      throw new GoJsonSyntaxError(unexpectedEnd);
    }
    const codePoint = this.text.codePointAt(this.pos) ?? 0;
    throw new GoJsonSyntaxError(`invalid character ${quoteGoByte(firstUtf8Byte(codePoint))} ${context}`);
  }
}

/** Go's scanner reports the offending byte: for a multi-byte character, its first UTF-8 byte. */
function firstUtf8Byte(codePoint: number): number {
  if (codePoint >= 0xd800 && codePoint <= 0xdfff) {
    return 0xef; // a lone surrogate reached Go as U+FFFD, bytes EF BF BD
  }
  if (codePoint < 0x80) return codePoint;
  if (codePoint < 0x800) return 0xc0 | (codePoint >> 6);
  if (codePoint < 0x10000) return 0xe0 | (codePoint >> 12);
  return 0xf0 | (codePoint >> 18);
}

/** encoding/json quoteChar: strconv.Quote(string(rune(b))) with single quotes around it. */
function quoteGoByte(byte: number): string {
  if (byte === 0x27) return "'\\''";
  if (byte === 0x22) return `'"'`;
  const quoted = goQuoteRune(byte);
  return `'${quoted}'`;
}

/** strconv.Quote of one rune below U+0100, without the surrounding double quotes. */
function goQuoteRune(code: number): string {
  const escapes: Record<number, string> = { 0x07: '\\a', 0x08: '\\b', 0x0c: '\\f', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t', 0x0b: '\\v', 0x5c: '\\\\' };
  const escaped = escapes[code];
  if (escaped !== undefined) return escaped;
  const char = String.fromCodePoint(code);
  if (/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(char)) return char;
  return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

