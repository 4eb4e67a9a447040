/**
 * The API server's toleration validation (pkg/apis/core/validation/validation.go at the KEP-5471
 * merge, aceb89debc2632c5c9956c8b7ef591426a485447): `ValidateTolerations`,
 * `validateOnlyAddedTolerations`, `ValidateTolerationsInPodAnnotations`, and the ratchet of
 * pkg/api/pod/util.go `allowTaintTolerationComparisonOperators`. Every check runs and every failure
 * is reported, in upstream's order, with upstream's path, cause type, bad value and text
 * (k8s-semantics §4).
 */
import type { FeatureGates } from '../api/feature-gates.js';
import type { Toleration } from '../api/types.js';
import { forbidden, invalid, notSupported, type FieldError } from '../plugins/field-errors.js';
import { isQualifiedName, isValidLabelValue } from '../validation/name-validation.js';
import { isDecimalInteger, parseInt64 } from './numeric.js';

export interface TolerationValidationOptions {
  /** PodValidationOptions.AllowTaintTolerationComparisonOperators: the gate, or the ratchet. */
  readonly allowComparisonOperators: boolean;
}

/** The operators a disabled comparison gate still lists: upstream names all four (row 4c). */
const operatorsWithComparison = ['Equal', 'Exists', 'Lt', 'Gt'] as const;
/** The operators listed for any other unknown operator, whatever the gate (row 4f). */
const operatorsWithoutComparison = ['Equal', 'Exists'] as const;
/** validateTaintEffect's list; NoScheduleNoAdmit stays commented out upstream. */
const taintEffects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;

/**
 * ValidateTolerations. `fieldPath` is the list's path (`spec.tolerations`); each toleration is
 * checked at `<fieldPath>[i]`. Absent string fields are `""`, as after Go's decoding.
 */
export function validateTolerations(
  tolerations: readonly Toleration[],
  fieldPath: string,
  options: TolerationValidationOptions,
): FieldError[] {
  const errors: FieldError[] = [];
  tolerations.forEach((toleration, i) => {
    const path = `${fieldPath}[${i}]`;
    const key = toleration.key ?? '';
    const operator = toleration.operator ?? '';
    const value = toleration.value ?? '';
    const effect = toleration.effect ?? '';
    const hasSeconds = toleration.tolerationSeconds !== undefined && toleration.tolerationSeconds !== null;

    // Row 1: a non-empty key must be a qualified name; one error per message (ValidateLabelName).
    if (key.length > 0) {
      for (const message of isQualifiedName(key)) {
        errors.push(invalid(`${path}.key`, key, message));
      }
    }
    // Row 2: only `Exists` may leave the key empty ("match all values and all keys").
    if (key.length === 0 && operator !== 'Exists') {
      errors.push(invalid(`${path}.operator`, operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'));
    }
    // Row 3: tolerationSeconds only means something for NoExecute; an empty effect fails too.
    if (hasSeconds && effect !== 'NoExecute') {
      errors.push(invalid(`${path}.effect`, effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    errors.push(...validateOperatorAndValue(operator, value, path, options));
    // Row 5: an empty effect means "all effects"; any other value must be one of the three, exactly.
    if (effect.length > 0 && !(taintEffects as readonly string[]).includes(effect)) {
      errors.push(notSupported(`${path}.effect`, effect, taintEffects));
    }
  });
  return errors;
}

/** Rows 4a–4f: the operator decides what the value must look like. */
function validateOperatorAndValue(operator: string, value: string, path: string, options: TolerationValidationOptions): FieldError[] {
  switch (operator) {
    case 'Equal':
    case '': {
      // 4a: upstream reports the value at `.operator`, all label-value messages joined with ";".
      const messages = isValidLabelValue(value);
      return messages.length > 0 ? [invalid(`${path}.operator`, value, messages.join(';'))] : [];
    }
    case 'Exists':
      // 4b: also at `.operator`, with the value as the bad value.
      return value.length > 0 ? [invalid(`${path}.operator`, value, "value must be empty when `operator` is 'Exists'")] : [];
    case 'Lt':
    case 'Gt': {
      if (!options.allowComparisonOperators) {
        // 4c: the value is not looked at (upstream `break`s).
        return [notSupported(`${path}.operator`, operator, operatorsWithComparison)];
      }
      // 4d and 4e: both checks run, so one value can earn two errors.
      const errors = isDecimalInteger(value).map((message) => invalid(`${path}.value`, value, message));
      const parsed = parseInt64(value);
      if (parsed.error !== undefined) {
        errors.push(invalid(`${path}.value`, value, parsed.error));
      }
      return errors;
    }
    default:
      // 4f: unknown operators (case matters: `exists`, `gt`) never list Lt/Gt.
      return [notSupported(`${path}.operator`, operator, operatorsWithoutComparison)];
  }
}

/**
 * validateOnlyAddedTolerations (pod UPDATE). Every old toleration must still be in the new list,
 * equal in key, operator, value and effect (upstream copies the candidate's tolerationSeconds onto
 * the old one before its DeepEqual, so only tolerationSeconds may change). The first one missing
 * gives a single Forbidden at the list's path and ends the check. Otherwise the new list is
 * validated again, so its errors appear a second time in the list; the rendered message
 * deduplicates them (ErrorList.ToAggregate).
 */
export function validateOnlyAddedTolerations(
  newTolerations: readonly Toleration[],
  oldTolerations: readonly Toleration[],
  fieldPath: string,
  options: TolerationValidationOptions,
): FieldError[] {
  for (const old of oldTolerations) {
    if (!newTolerations.some((candidate) => equalExceptSeconds(old, candidate))) {
      return [forbidden(fieldPath, 'existing toleration can not be modified except its tolerationSeconds')];
    }
  }
  return validateTolerations(newTolerations, fieldPath, options);
}

function equalExceptSeconds(a: Toleration, b: Toleration): boolean {
  return (
    (a.key ?? '') === (b.key ?? '') &&
    (a.operator ?? '') === (b.operator ?? '') &&
    (a.value ?? '') === (b.value ?? '') &&
    (a.effect ?? '') === (b.effect ?? '')
  );
}

/**
 * allowTaintTolerationComparisonOperators: Gt/Lt are allowed when the gate is on, or when the old
 * object (UPDATE) already uses either in its spec tolerations, so an existing object stays
 * updatable after the gate is turned off. CREATE has no old object: only the gate counts.
 */
export function allowsComparisonOperators(
  gates: Pick<FeatureGates, 'TaintTolerationComparisonOperators'>,
  oldTolerations: readonly Toleration[] | undefined,
): boolean {
  return gates.TaintTolerationComparisonOperators || (oldTolerations ?? []).some((t) => t.operator === 'Lt' || t.operator === 'Gt');
}

/** core.TolerationsAnnotationKey: the alpha-era way to give a pod tolerations, still validated. */
export const tolerationsAnnotationKey = 'scheduler.alpha.kubernetes.io/tolerations';

/**
 * ValidateTolerationsInPodAnnotations, run by ValidatePodSpecificAnnotations only when the
 * annotation is non-empty. `fieldPath` is the annotations' path (`metadata.annotations` for a
 * pod, `<template>.annotations` for a template). A value that Go's encoding/json cannot decode into
 * []core.Toleration gives one Invalid at `fieldPath` whose bad value is the annotation key and
 * whose detail is Go's error text; otherwise the tolerations are validated at
 * `<fieldPath>.scheduler.alpha.kubernetes.io/tolerations[i]`.
 */
export function validateTolerationsInAnnotations(
  annotations: Readonly<Record<string, string>> | undefined,
  fieldPath: string,
  options: TolerationValidationOptions,
): FieldError[] {
  const raw: unknown = annotations?.[tolerationsAnnotationKey];
  if (typeof raw !== 'string' || raw === '') {
    return [];
  }
  const decoded = decodeTolerationsAsGo(raw);
  if ('error' in decoded) {
    return [invalid(fieldPath, tolerationsAnnotationKey, decoded.error)];
  }
  return validateTolerations(decoded.tolerations, `${fieldPath}.${tolerationsAnnotationKey}`, options);
}

// ---------------------------------------------------------------------------------------------
// json.Unmarshal(data, &[]core.Toleration) with Go's error texts. Go first scans the whole input
// for syntax errors (checkValid), then decodes, remembering only the first type mismatch while it
// goes on. Both steps are reproduced because the annotation's parse error is shown to the user.

type JsonNode =
  | { readonly kind: 'null' }
  | { readonly kind: 'bool' }
  | { readonly kind: 'number'; readonly raw: string }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'array'; readonly items: readonly JsonNode[] }
  | { readonly kind: 'object'; readonly entries: readonly (readonly [string, JsonNode])[] };

type Decoded = { readonly tolerations: Toleration[] } | { readonly error: string };

/** Exported for tests: the decoding half of GetTolerationsFromPodAnnotations. */
export function decodeTolerationsAsGo(text: string): Decoded {
  let root: JsonNode;
  try {
    root = new GoJsonScanner(text).parseDocument();
  } catch (error) {
    if (error instanceof GoJsonSyntaxError) {
      return { error: error.message };
    }
    throw error;
  }
  return decodeTolerationList(root);
}

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
    this.pos++;
    const entries: (readonly [string, JsonNode])[] = [];
    this.skipSpace();
    if (this.peek() === '}') {
      this.pos++;
      return { kind: 'object', entries };
    }
    for (;;) {
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
      this.skipSpace();
      const next = this.peek();
      if (next === '}') {
        this.pos++;
        return { kind: 'object', entries };
      }
      if (next !== ',') {
        this.fail('after object key:value pair');
      }
      this.pos++;
      this.skipSpace();
    }
  }

  private parseArray(): JsonNode {
    this.pos++;
    const items: JsonNode[] = [];
    this.skipSpace();
    if (this.peek() === ']') {
      this.pos++;
      return { kind: 'array', items };
    }
    for (;;) {
      items.push(this.parseValue());
      this.skipSpace();
      const next = this.peek();
      if (next === ']') {
        this.pos++;
        return { kind: 'array', items };
      }
      if (next !== ',') {
        this.fail('after array element');
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

/** How encoding/json names a JSON value in an UnmarshalTypeError. */
function goValueWord(node: JsonNode): string {
  switch (node.kind) {
    case 'bool':
      return 'bool';
    case 'number':
      return 'number';
    case 'string':
      return 'string';
    case 'array':
      return 'array';
    case 'object':
      return 'object';
    case 'null':
      return 'null';
  }
}

function decodeTolerationList(root: JsonNode): Decoded {
  if (root.kind === 'null') {
    return { tolerations: [] };
  }
  if (root.kind !== 'array') {
    return { error: `json: cannot unmarshal ${goValueWord(root)} into Go value of type []core.Toleration` };
  }
  const tolerations: Toleration[] = [];
  let firstError: string | undefined;
  for (const item of root.items) {
    if (item.kind === 'null') {
      tolerations.push({}); // null leaves the new element at its zero value
    } else if (item.kind === 'object') {
      const { toleration, error } = decodeToleration(item.entries);
      tolerations.push(toleration);
      firstError ??= error;
    } else {
      tolerations.push({});
      firstError ??= `json: cannot unmarshal ${goValueWord(item)} into Go value of type core.Toleration`;
    }
  }
  return firstError === undefined ? { tolerations } : { error: firstError };
}

type StringField = 'key' | 'operator' | 'value' | 'effect';
/** The Go type each string field prints in a type error. */
const stringFieldTypes: Record<StringField, string> = {
  key: 'string',
  operator: 'core.TolerationOperator',
  value: 'string',
  effect: 'core.TaintEffect',
};
const fieldNames = ['key', 'operator', 'value', 'effect', 'tolerationSeconds'] as const;

/**
 * Go matches an object key to a field by its exact JSON name, else case-insensitively (foldName:
 * ASCII case, plus the Kelvin sign and long s that fold to k and s). Unknown keys are skipped;
 * a repeated key overwrites.
 */
function matchField(key: string): (typeof fieldNames)[number] | undefined {
  const exact = fieldNames.find((name) => name === key);
  if (exact !== undefined) return exact;
  const folded = key.replace(/\u212A/g, 'k').replace(/\u017F/g, 's').toLowerCase();
  return fieldNames.find((name) => name.toLowerCase() === folded);
}

function decodeToleration(entries: readonly (readonly [string, JsonNode])[]): { toleration: Toleration; error?: string } {
  const toleration: Toleration = {};
  let error: string | undefined;
  const typeError = (value: string, field: string, type: string): string =>
    `json: cannot unmarshal ${value} into Go struct field Toleration.${field} of type ${type}`;
  for (const [key, node] of entries) {
    const field = matchField(key);
    if (field === undefined || node.kind === 'null') {
      if (field === 'tolerationSeconds') {
        toleration.tolerationSeconds = null; // null sets a pointer to nil; strings keep their value
      }
      continue;
    }
    if (field === 'tolerationSeconds') {
      const parsed = node.kind === 'number' ? parseInt64(node.raw) : undefined;
      if (parsed?.value !== undefined) {
        toleration.tolerationSeconds = Number(parsed.value);
      } else {
        // A number that is no int64 (1.5, 1e3, 2^63) is named with its literal.
        const word = node.kind === 'number' ? `number ${node.raw}` : goValueWord(node);
        error ??= typeError(word, field, 'int64');
      }
    } else if (node.kind === 'string') {
      toleration[field] = node.value;
    } else {
      error ??= typeError(goValueWord(node), field, stringFieldTypes[field]);
    }
  }
  return error === undefined ? { toleration } : { toleration, error };
}
