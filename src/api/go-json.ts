/**
 * Go's encoding/json reading of JSON text, for the decoders that must answer as Go does
 * (src/tolerations/go-json-tolerations.ts): the language Go's scanner accepts, its SyntaxError
 * texts, and the tree a decoder walks. Go first scans the whole input for syntax errors
 * (checkValid) and only then decodes, so a syntax error anywhere wins over a type mismatch; this
 * module is that first step, and the decoders the second.
 *
 * The tree keeps what a Go decoder needs and no more: a number's literal (whether it fits an
 * int64 is the target type's question), a string's decoded value, object entries in document
 * order with repeats kept (a repeated key overwrites as the decoder walks).
 */

/** A JSON value as a Go decoder walks it. */
export type GoJsonNode =
  | { readonly kind: 'null' }
  | { readonly kind: 'bool' }
  | { readonly kind: 'number'; readonly raw: string }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'array'; readonly items: readonly GoJsonNode[] }
  | { readonly kind: 'object'; readonly entries: readonly (readonly [string, GoJsonNode])[] };

export type GoJsonParse =
  | { readonly node: GoJsonNode; readonly syntaxError?: undefined }
  /** Go's SyntaxError text. */
  | { readonly node?: undefined; readonly syntaxError: string };

/** The scan of json.Unmarshal (checkValid) of `text`: its tree, or Go's SyntaxError text. */
export function parseGoJson(text: string): GoJsonParse {
  try {
    return { node: new GoJsonScanner(text).parseDocument() };
  } catch (error) {
    if (error instanceof GoJsonSyntaxError) {
      return { syntaxError: error.message };
    }
    throw error;
  }
}

/**
 * An already parsed value (JSON or YAML) as the tree the scanner would have built from its JSON.
 * A number keeps the literal JavaScript prints for it, so one an int64 cannot hold is named as
 * `number 1.5`.
 */
export function goJsonNodeFromValue(value: unknown): GoJsonNode {
  if (value === null || value === undefined) return { kind: 'null' };
  if (Array.isArray(value)) return { kind: 'array', items: value.map(goJsonNodeFromValue) };
  switch (typeof value) {
    case 'boolean':
      return { kind: 'bool' };
    case 'number':
    case 'bigint':
      return { kind: 'number', raw: String(value) };
    case 'string':
      return { kind: 'string', value };
    default:
      return { kind: 'object', entries: Object.entries(value).map(([key, entry]) => [key, goJsonNodeFromValue(entry)] as const) };
  }
}

/** How encoding/json names a JSON value in an UnmarshalTypeError. */
export function goValueWord(node: GoJsonNode): string {
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

  parseDocument(): GoJsonNode {
    this.skipSpace();
    const node = this.parseValue();
    this.skipSpace();
    if (this.pos < this.text.length) {
      this.fail('after top-level value');
    }
    return node;
  }

  private parseValue(): GoJsonNode {
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

  private parseObject(): GoJsonNode {
    const entries: (readonly [string, GoJsonNode])[] = [];
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

  private parseArray(): GoJsonNode {
    const items: GoJsonNode[] = [];
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

  private parseLiteral(word: string, node: GoJsonNode): GoJsonNode {
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

/**
 * The characters strconv.Quote writes with a backslash escape of their own (appendEscapedRune),
 * by code point; the quote character (`"` for Quote, `'` for QuoteRune) is escaped as well.
 */
export const goBackslashEscapes: Readonly<Record<number, string>> = {
  0x07: '\\a',
  0x08: '\\b',
  0x0c: '\\f',
  0x0a: '\\n',
  0x0d: '\\r',
  0x09: '\\t',
  0x0b: '\\v',
  0x5c: '\\\\',
};

/** strconv.Quote of one rune below U+0100, without the surrounding double quotes. */
function goQuoteRune(code: number): string {
  const escaped = goBackslashEscapes[code];
  if (escaped !== undefined) return escaped;
  const char = String.fromCodePoint(code);
  if (/^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u.test(char)) return char;
  return code < 0x80 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
