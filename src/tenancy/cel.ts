/**
 * CEL for tenancy policies: compile once at load (parse + type-check), evaluate per request.
 *
 * The variables are those of Kubernetes admission CEL (ValidatingAdmissionPolicy, webhook
 * matchConditions): `object`, `oldObject`, `namespaceObject`, `request`. They are declared `dyn`,
 * as Kubernetes does for objects without a schema: field access type-checks, and `oldObject` may
 * be `null` (it is on CREATE), which a `map` declaration would reject.
 *
 * Kubernetes CEL has int64 integers and no plain JSON numbers, so every JSON integer becomes a
 * BigInt before evaluation (`toCelVariables`); `replicas + 1` then means what it means in the
 * cluster. Integers beyond 2^53 have already lost precision in JSON.parse; nothing here can
 * recover that.
 *
 * Cost. @marcbachmann/cel-js 8.0.0 offers structural limits checked at parse time (maxAstNodes,
 * maxDepth, maxListElements, maxMapEntries, maxCallArguments) and no runtime cost budget, unlike
 * Kubernetes' estimated/actual cost limits. Evaluation is synchronous and cannot be interrupted, so
 * the bound is static: a small AST, and comprehensions (all/exists/exists_one/map/filter) never
 * nested, so one evaluation visits each element of a list in the request a bounded number of times:
 * linear in the request's size. (Two nested comprehensions over a list the request controls are
 * quadratic: 20,000 tolerations, 240 KB of JSON, took over 5 s in a test.)
 *
 * Regular expressions. Kubernetes CEL's `matches()` (cel-go) and the Kubernetes library's
 * `find()`/`findAll()` (k8s.io/apiserver/pkg/cel/library/regex.go) use Go's `regexp`: RE2 syntax,
 * linear time, no backreferences, no lookaround. The library's own `matches()` builds a JavaScript
 * RegExp, which backtracks: `'^(a+)+$'` against a tenant's 40-character annotation never returns
 * unless V8's `--enable-experimental-regexp-engine-on-excessive-backtracks` is set (src/main.ts
 * sets it now, but a library caller or a worker may not have it), and it accepts patterns Kubernetes
 * refuses and reads others differently (`\z`, `(?i)`). So every regex function here runs on re2js,
 * a port of RE2/J, itself a port of Go's regexp: the same syntax, limits and messages
 * (`error parsing regexp: …`), linear time whatever the process flags. See rewriteRegexCalls.
 *
 * Strings. Three functions of Kubernetes CEL's strings extension (cel-go ext/strings.go) are
 * JavaScript's own in the library, which read more than ASCII or another set of spaces:
 * `lowerAscii()`/`upperAscii()` are `toLowerCase()`/`toUpperCase()` (the Kelvin sign K becomes k,
 * so `'platform-\u212Ait'.lowerAscii() == 'platform-kit'`), and `trim()` is JavaScript's trim (it
 * removes U+FEFF, which Go's strings.TrimSpace keeps, and keeps U+0085, which Go removes). A rule
 * comparing a requester's name after one of them would answer otherwise than the API server's
 * CEL for a name an identity provider lets its owner choose. Each call is renamed to cel-go's
 * version (ascii-and-space functions below), as the regex functions are.
 */
import { Environment, EvaluationError, ParseError, TypeError as CelTypeError } from '@marcbachmann/cel-js';
import type { ASTNode, ParseResult } from '@marcbachmann/cel-js';
import { RE2JS, RE2JSException } from 're2js';
import { goTrimSpace } from '../api/go-strings.js';
import { isCelNode, walkCel } from './cel-ast.js';

/** What a policy expression must produce. */
export type ExpressionResultType = 'string' | 'bool';
type ResultValue<T extends ExpressionResultType> = T extends 'string' ? string : boolean;

/**
 * The library's limits, tightened for expressions that read a label or a name. The shipped
 * examples have under 60 AST nodes and a nesting depth under 10; 1,000 nodes and depth 50 leave
 * more than 15× headroom while keeping a pasted-in monster out (the defaults are 100,000 and 250).
 * Literal lists and maps of more than 100 entries have no place in a group rule.
 */
const limits = {
  maxAstNodes: 1000,
  maxDepth: 50,
  maxListElements: 100,
  maxMapEntries: 100,
  maxCallArguments: 8,
};

/**
 * One comprehension at a time (chains like `.map(…).filter(…)` are fine): nesting two over lists
 * the request controls makes one pod's evaluation quadratic in its size, and evaluation cannot be
 * interrupted. A tenancy rule reads names and labels; it has no need for a nested loop.
 */
const maxComprehensionNesting = 1;
const comprehensionMacros = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

const admissionVariableNames = ['object', 'oldObject', 'namespaceObject', 'request'] as const;
export type AdmissionVariableName = (typeof admissionVariableNames)[number];

/**
 * A regular expression of a policy, compiled once at load: what a literal pattern of `matches()`,
 * `find()` or `findAll()` becomes in the compiled expression (rewriteRegexCalls), so that no
 * evaluation compiles one and none ever reaches a JavaScript RegExp.
 */
class CompiledRegex {
  constructor(readonly regex: RE2JS) {}
}

/** CEL names for the type and for `matches()` on RE2; messages spell them as the policy author wrote them (celSpelling). */
const regexType = 'tolerator.RegexPattern';
const re2Matches = 'toleratorRe2Matches';

/** Only code units below 0x80: there JavaScript's case mapping is ASCII's, and native. */
const asciiOnly = /^[^\u0080-\uffff]*$/;

/**
 * cel-go's lowerAscii/upperAscii: only A-Z (or a-z) change, one code unit at a time (every other
 * code unit, surrogates included, is copied), so the result has the input's length. An ASCII
 * string (names, labels: the usual case) takes the native toLowerCase/toUpperCase, which agree.
 */
function mapAsciiLetters(text: string, from: number, to: number): string {
  if (asciiOnly.test(text)) {
    return from < to ? text.toLowerCase() : text.toUpperCase();
  }
  let out = '';
  let copiedUpTo = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= from && code <= from + 25) {
      out += text.slice(copiedUpTo, i) + String.fromCharCode(code - from + to);
      copiedUpTo = i + 1;
    }
  }
  return copiedUpTo === 0 ? text : out + text.slice(copiedUpTo);
}

/** Kubernetes CEL's string functions the library defines otherwise, and the names of cel-go's versions here. */
const goStringFunctions: ReadonlyMap<string, string> = new Map([
  ['lowerAscii', 'toleratorLowerAscii'],
  ['upperAscii', 'toleratorUpperAscii'],
  ['trim', 'toleratorTrim'],
]);

/** Go's `FindAllString(s, n)`: n < 0 finds all; re2js answers null where Go answers nil, which CEL shows as []. */
function findAll(text: string, pattern: CompiledRegex, limit: bigint): string[] {
  // A limit beyond 2^53 still means "more matches than the string can hold".
  const found = pattern.regex.re2().findAll(text, Number(limit)) as string[] | null;
  return found ?? [];
}

/**
 * The environment is configuration, not state: it is built once, never registered into again, and
 * shared by every compilation (building one is the expensive part of the library). The regex
 * functions take a CompiledRegex: `string.matches(string)` stays the library's, but no compiled
 * expression calls it (rewriteRegexCalls renames every call).
 */
const environment = admissionVariableNames
  .reduce((env, name) => env.registerVariable(name, 'dyn'), new Environment({ enableOptionalTypes: true, limits }))
  .registerType(regexType, CompiledRegex)
  .registerFunction(`string.${re2Matches}(${regexType}): bool`, (text: string, pattern: CompiledRegex) => pattern.regex.test(text))
  .registerFunction(`matches(string, ${regexType}): bool`, (text: string, pattern: CompiledRegex) => pattern.regex.test(text))
  // Go's FindString: the leftmost match, '' when there is none.
  .registerFunction(`string.find(${regexType}): string`, (text: string, pattern: CompiledRegex) => pattern.regex.re2().find(text) as string)
  .registerFunction(`string.findAll(${regexType}): list<string>`, (text: string, pattern: CompiledRegex) => findAll(text, pattern, -1n))
  .registerFunction(`string.findAll(${regexType}, int): list<string>`, findAll)
  // 0x41 'A', 0x61 'a': the distance between the cases is 32 in ASCII.
  .registerFunction('string.toleratorLowerAscii(): string', (text: string) => mapAsciiLetters(text, 0x41, 0x61))
  .registerFunction('string.toleratorUpperAscii(): string', (text: string) => mapAsciiLetters(text, 0x61, 0x41))
  .registerFunction('string.toleratorTrim(): string', goTrimSpace);

/** Where in the expression text a problem is: 0-based offset, 1-based line and column. */
export interface ExpressionPosition {
  readonly offset: number;
  readonly line: number;
  readonly column: number;
}

export interface ExpressionError {
  /** The library's one-line summary, e.g. `Unexpected token: EOF`. */
  readonly message: string;
  readonly position: ExpressionPosition | undefined;
}

/** Variables already converted for CEL; only `toCelVariables` makes them. */
export interface CelVariables {
  readonly converted: Readonly<Record<AdmissionVariableName, unknown>>;
}

/** A thrown evaluation failure: the webhook cannot decide, answers 500, and the failurePolicy applies. */
export class ExpressionEvaluationError extends Error {
  override readonly name = 'ExpressionEvaluationError';
}

export interface CompiledExpression<T extends ExpressionResultType> {
  readonly source: string;
  readonly resultType: T;
  /** The admission variables the expression reads (`namespaceObject` only, for a typical group rule). */
  readonly variables: ReadonlySet<AdmissionVariableName>;
  /**
   * The fields it reads that the request's author writes (`object.metadata.labels`, …), each once,
   * in the order they appear: see tenantWrittenReads.
   */
  readonly tenantWrittenReads: readonly string[];
  /** The reads of the namespace's name (`namespaceObject.metadata.name`, …), each once: see namespaceNameReads. */
  readonly namespaceNameReads: readonly string[];
  /** Throws ExpressionEvaluationError when the expression fails or yields another type. */
  evaluate(variables: CelVariables): ResultValue<T>;
}

export type CompileResult<T extends ExpressionResultType> =
  | { readonly expression: CompiledExpression<T>; readonly error?: undefined }
  | { readonly error: ExpressionError; readonly expression?: undefined };

/**
 * Parses and type-checks `source`. A `dyn` result is accepted (a label read through a `dyn`
 * object is `dyn` until run) and checked again on every evaluation; any other type than the one
 * wanted is a compile error.
 */
export function compileExpression<T extends ExpressionResultType>(source: string, resultType: T): CompileResult<T> {
  let parsed: ParseResult;
  try {
    parsed = environment.parse(source);
  } catch (error) {
    if (error instanceof ParseError) {
      return { error: { message: error.summary, position: positionOf(source, error.range?.start) } };
    }
    throw error;
  }
  const regexProblem = rewriteRegexCalls(parsed.ast);
  if (regexProblem !== undefined) {
    return { error: { message: regexProblem.message, position: positionOf(source, regexProblem.at) } };
  }
  const checked = parsed.check();
  if (!checked.valid) {
    const error = checked.error;
    return {
      error: {
        message: celSpelling(error?.summary ?? 'type check failed'),
        position: positionOf(source, error?.range?.start),
      },
    };
  }
  if (checked.type !== resultType && checked.type !== 'dyn') {
    return {
      error: {
        message: `must evaluate to ${resultType}, but its type is ${checked.type ?? 'unknown'}`,
        position: positionOf(source, 0),
      },
    };
  }
  const nesting = comprehensionNesting(parsed.ast);
  if (nesting.depth > maxComprehensionNesting) {
    return {
      error: {
        message: `comprehensions nest ${nesting.depth} deep; at most ${maxComprehensionNesting} is allowed so evaluation cost stays linear in the request`,
        position: positionOf(source, nesting.deepestAt),
      },
    };
  }
  return {
    expression: {
      source,
      resultType,
      variables: referencedVariables(parsed.ast),
      tenantWrittenReads: tenantWrittenReads(parsed.ast),
      namespaceNameReads: namespaceNameReads(parsed.ast),
      evaluate: (variables) => evaluateChecked(parsed, source, resultType, variables),
    },
  };
}

function evaluateChecked<T extends ExpressionResultType>(
  parsed: ParseResult,
  source: string,
  resultType: T,
  variables: CelVariables,
): ResultValue<T> {
  let value: unknown;
  try {
    value = parsed(variables.converted);
  } catch (error) {
    if (error instanceof EvaluationError || error instanceof CelTypeError) {
      const position = positionOf(source, error.range?.start);
      throw new ExpressionEvaluationError(
        `${celSpelling(error.summary)}${position === undefined ? '' : ` (line ${position.line}, column ${position.column})`}`,
        { cause: error },
      );
    }
    throw error;
  }
  const wantedJsType = resultType === 'string' ? 'string' : 'boolean';
  if (typeof value !== wantedJsType) {
    throw new ExpressionEvaluationError(`must evaluate to ${resultType}, got ${describeValue(value)}`);
  }
  return value as ResultValue<T>;
}

function describeValue(value: unknown): string {
  if (value === null) {
    return 'null';
  }
  if (typeof value === 'bigint') {
    return `int ${value}`;
  }
  if (Array.isArray(value)) {
    return 'a list';
  }
  return typeof value === 'object' ? 'a map or message' : typeof value;
}

/**
 * Builds the variables for one request. JSON integers become BigInt (CEL int64); fractions stay
 * numbers (CEL double). Objects are copied, never modified. Each variable is converted the first
 * time an expression reads it: a group rule reads only `namespaceObject`, and converting the whole
 * pod for it was a twentieth of a review's CPU time (measured in bench/). A value given as a
 * function (`request`, which the caller builds from the attributes) is built then too.
 */
export function toCelVariables(values: Readonly<Record<AdmissionVariableName, unknown>>): CelVariables {
  return { converted: new LazyVariables(values) };
}

/** Not converted yet: undefined is a value (it converts to null), so it cannot mark that. */
const pending: unique symbol = Symbol('pending');

/**
 * The admission variables, each converted on first read. The library reads a root variable as a
 * plain property (`context[name]`), so getters on the class serve: one object per request,
 * where defining four getters on a fresh object cost four closures and four defineProperty calls.
 */
class LazyVariables implements Readonly<Record<AdmissionVariableName, unknown>> {
  readonly #values: Readonly<Record<AdmissionVariableName, unknown>>;
  #object: unknown = pending;
  #oldObject: unknown = pending;
  #namespaceObject: unknown = pending;
  #request: unknown = pending;

  constructor(values: Readonly<Record<AdmissionVariableName, unknown>>) {
    this.#values = values;
  }

  get object(): unknown {
    if (this.#object === pending) this.#object = convertVariable(this.#values.object);
    return this.#object;
  }

  get oldObject(): unknown {
    if (this.#oldObject === pending) this.#oldObject = convertVariable(this.#values.oldObject);
    return this.#oldObject;
  }

  get namespaceObject(): unknown {
    if (this.#namespaceObject === pending) this.#namespaceObject = convertVariable(this.#values.namespaceObject);
    return this.#namespaceObject;
  }

  get request(): unknown {
    if (this.#request === pending) this.#request = convertVariable(this.#values.request);
    return this.#request;
  }
}

function convertVariable(value: unknown): unknown {
  return toCelValue(typeof value === 'function' ? (value as () => unknown)() : value);
}

/**
 * A JSON value as Kubernetes CEL sees it: integers as BigInt, absent as null. Objects are not
 * copied whole: each becomes a shell whose fields convert when an expression first reads them,
 * so `object.metadata.labels` costs the labels, not the whole pod with its managedFields.
 */
export function toCelValue(value: unknown): unknown {
  if (value === undefined) {
    // Absent is null in Kubernetes CEL (oldObject on CREATE, namespaceObject when unknown).
    return null;
  }
  if (typeof value === 'number') {
    return Number.isInteger(value) ? BigInt(value) : value;
  }
  if (Array.isArray(value)) {
    return value.map(toCelValue);
  }
  if (value !== null && typeof value === 'object') {
    const shell: Record<string, unknown> = {};
    for (const [key, field] of Object.entries(value)) {
      // An undefined field is absent on the wire; the library would report it as present.
      if (field === undefined) {
        continue;
      }
      if (field === null || typeof field !== 'object') {
        // Assignment makes the same plain property at a fraction of defineProperty's cost; only a
        // key named `__proto__` needs defineProperty, or it would set the shell's prototype.
        if (key === '__proto__') {
          Object.defineProperty(shell, key, { value: toCelValue(field), enumerable: true, configurable: true, writable: true });
        } else {
          shell[key] = toCelValue(field);
        }
        continue;
      }
      Object.defineProperty(shell, key, {
        enumerable: true,
        configurable: true,
        get() {
          const converted = toCelValue(field);
          Object.defineProperty(shell, key, { value: converted, enumerable: true, configurable: true });
          return converted;
        },
      });
    }
    return shell;
  }
  return value;
}

/** The regex functions of Kubernetes CEL, by receiver and arity, and the index of the pattern among the arguments. */
const regexFunctions: readonly {
  readonly op: 'rcall' | 'call';
  readonly name: string;
  readonly arities: readonly number[];
  readonly pattern: number;
}[] = [
  { op: 'rcall', name: 'matches', arities: [1], pattern: 0 },
  { op: 'call', name: 'matches', arities: [2], pattern: 1 },
  { op: 'rcall', name: 'find', arities: [1], pattern: 0 },
  { op: 'rcall', name: 'findAll', arities: [1, 2], pattern: 0 },
];

/**
 * Compiles the pattern of every regex call with RE2 and puts the compiled pattern in its place,
 * renaming `x.matches(…)` to the RE2 function, and renames `lowerAscii()`, `upperAscii()` and
 * `trim()` to cel-go's versions (goStringFunctions). Before type checking, so the checker picks
 * these overloads. Returns the first problem and where it is:
 *
 * - a pattern RE2 refuses (`(?=x)`, `\1`, `(a`, `a{1001}`): Kubernetes CEL compiles literal
 *   patterns when it builds the program (cel-go's regex optimizations, which the API server turns
 *   on) and refuses the expression with Go's own message, which re2js reproduces;
 * - a pattern that is not a string literal (`x.matches(object.metadata.annotations['re'])`).
 *   Kubernetes CEL compiles such a pattern on every evaluation; tolerator refuses it, as it refuses
 *   nested comprehensions: an evaluation cannot be interrupted, a pattern computed per request
 *   costs a compilation each time and matching costs the pattern's size times the text's, and the
 *   pattern may be a tenant's. A policy reads labels and names against fixed patterns.
 */
function rewriteRegexCalls(root: ASTNode): { message: string; at: number } | undefined {
  let problem: { message: string; at: number } | undefined;
  walkCel(root, (node) => {
    if (problem !== undefined) {
      return false;
    }
    const goName = goStringFunctionOf(node);
    if (goName !== undefined) {
      (node.args as unknown[])[0] = goName;
    }
    const call = regexCallOf(node);
    if (call !== undefined) {
      const { name, patternNode } = call;
      if (patternNode.op !== 'value' || typeof patternNode.args !== 'string') {
        problem = {
          message: `the pattern of ${name}() must be a string literal: tolerator compiles every regular expression once, at load (with RE2, as Kubernetes CEL does); a pattern computed per request would cost a compilation on every evaluation, which cannot be interrupted`,
          at: patternNode.start,
        };
        return false;
      }
      try {
        (patternNode as { args: unknown }).args = new CompiledRegex(RE2JS.compile(patternNode.args));
      } catch (error) {
        if (error instanceof RE2JSException) {
          problem = {
            message: `${name}(): ${error.message} (Kubernetes CEL refuses it too: its regular expressions are RE2's)`,
            at: patternNode.start,
          };
          return false;
        }
        throw error;
      }
      if (node.op === 'rcall' && name === 'matches') {
        (node.args as unknown[])[0] = re2Matches;
      }
    }
    return true;
  });
  return problem;
}

/** The name of cel-go's version for a receiver call `x.lowerAscii()`, `x.upperAscii()` or `x.trim()`. */
function goStringFunctionOf(node: ASTNode): string | undefined {
  if (node.op !== 'rcall') {
    return undefined;
  }
  const [name, , callArguments] = node.args as unknown[];
  return typeof name === 'string' && Array.isArray(callArguments) && callArguments.length === 0 ? goStringFunctions.get(name) : undefined;
}

function regexCallOf(node: ASTNode): { name: string; patternNode: ASTNode } | undefined {
  if (node.op !== 'rcall' && node.op !== 'call') {
    return undefined;
  }
  const args = node.args as unknown[];
  const name = args[0];
  // rcall: [name, receiver, arguments]; call: [name, arguments].
  const callArguments = node.op === 'rcall' ? args[2] : args[1];
  if (typeof name !== 'string' || !Array.isArray(callArguments)) {
    return undefined;
  }
  const known = regexFunctions.find((fn) => fn.op === node.op && fn.name === name && fn.arities.includes(callArguments.length));
  const patternNode: unknown = known === undefined ? undefined : callArguments[known.pattern];
  return isCelNode(patternNode) ? { name, patternNode } : undefined;
}

/** A message of the library, with the names rewriteRegexCalls gave (regex and string functions) spelt as the policy author wrote them. */
function celSpelling(message: string): string {
  let spelt = message.replaceAll(re2Matches, 'matches').replaceAll(regexType, 'string');
  for (const [name, goName] of goStringFunctions) {
    spelt = spelt.replaceAll(goName, name);
  }
  return spelt;
}

/** The admission variables an expression names (a comprehension variable of the same name counts too). */
function referencedVariables(root: ASTNode): ReadonlySet<AdmissionVariableName> {
  const names = new Set<AdmissionVariableName>();
  walkCel(root, (node) => {
    if (node.op === 'id' && typeof node.args === 'string' && (admissionVariableNames as readonly string[]).includes(node.args)) {
      names.add(node.args as AdmissionVariableName);
      return false;
    }
    return true;
  });
  return names;
}

/**
 * The fields of `object` and `oldObject` an expression reads: everything in them is written by
 * whoever creates the pod or workload, so a policy deciding `exempt`, `group` or `infrastructure`
 * from them lets a tenant choose the answer (RBAC cannot restrict single labels). The one field
 * the author cannot choose is `metadata.namespace`, which the API server sets from the request
 * path, so it is not reported. `request.userInfo` and `namespaceObject` are not the tenant's.
 *
 * Reads are found syntactically: a chain of field selections and constant indexes starting at the
 * variable (`object.metadata.?labels['x']` reads `object.metadata.labels`); a chain that stops at a
 * computed index or a function call reports what it selected up to there.
 */
export function tenantWrittenReads(root: ASTNode): string[] {
  return chainReads(root, ([variable, ...fields]) =>
    (variable === 'object' || variable === 'oldObject') && !(fields[0] === 'metadata' && fields[1] === 'namespace')
      ? // Labels and annotations are named as a whole: which key is read does not change who writes it.
        [variable, ...fields.slice(0, 2)].join('.')
      : undefined,
  );
}

/**
 * The reads of the namespace's name an expression makes: `namespaceObject.metadata.name`, its
 * label `kubernetes.io/metadata.name` (which the API server sets to the name), `request.namespace`
 * and `object.metadata.namespace` (the API server sets both from the request path, so a pod's
 * author cannot choose them, but whoever creates the namespace chose them). Where users may
 * create namespaces (a self-provisioner role, hierarchical namespaces, Capsule), a rule deciding
 * from the name lets any of them pick the answer: `team-a-x` joins group team-a, `logging` reaches
 * every group. A label can be guarded by a policy engine on create and update; a name only by
 * restricting who may create which names.
 */
export function namespaceNameReads(root: ASTNode): string[] {
  return chainReads(root, namespaceNameRead);
}

/**
 * What `readOf` names among the selection chains of an expression (each chain once, from its
 * variable; the computed indexes met on the way are expressions of their own and walked too).
 */
function chainReads(root: ASTNode, readOf: (path: readonly string[]) => string | undefined): string[] {
  const reads = new Set<string>();
  const enter = (node: ASTNode): boolean => {
    const chain = selectionChain(node);
    if (chain === undefined) return true;
    const read = readOf(chain.path);
    if (read !== undefined) reads.add(read);
    walkCel(chain.computedIndexes, enter);
    return false;
  };
  walkCel(root, enter);
  return [...reads];
}

function namespaceNameRead(path: readonly string[]): string | undefined {
  const [variable, first, second, third] = path;
  if (variable === 'namespaceObject' && first === 'metadata') {
    if (second === 'name') return 'namespaceObject.metadata.name';
    if (second === 'labels' && third === 'kubernetes.io/metadata.name')
      return "namespaceObject.metadata.labels['kubernetes.io/metadata.name']";
    return undefined;
  }
  if (variable === 'request' && first === 'namespace') return 'request.namespace';
  if ((variable === 'object' || variable === 'oldObject') && first === 'metadata' && second === 'namespace')
    return `${variable}.metadata.namespace`;
  return undefined;
}

const selections = new Set(['.', '.?']);
const indexes = new Set(['[]', '[?]']);

/** `id(.field|[const])*`: the variable and field names, and any computed indexes met on the way. */
function selectionChain(node: ASTNode): { path: string[]; computedIndexes: unknown[] } | undefined {
  if (node.op === 'id') {
    return typeof node.args === 'string' ? { path: [node.args], computedIndexes: [] } : undefined;
  }
  const args = node.args as unknown;
  if (!Array.isArray(args) || args.length !== 2 || !isCelNode(args[0])) {
    return undefined;
  }
  const inner = selectionChain(args[0]);
  if (inner === undefined) {
    return undefined;
  }
  const selector: unknown = args[1];
  if (selections.has(node.op) && typeof selector === 'string') {
    return { path: [...inner.path, selector], computedIndexes: inner.computedIndexes };
  }
  if (indexes.has(node.op)) {
    if (isCelNode(selector) && selector.op === 'value' && typeof selector.args === 'string') {
      return { path: [...inner.path, selector.args], computedIndexes: inner.computedIndexes };
    }
    return { path: inner.path, computedIndexes: [...inner.computedIndexes, selector] };
  }
  return undefined;
}

/** 1-based line and column (in UTF-16 code units, as editors count them) of an offset into `source`. */
export function positionOf(source: string, offset: number | undefined): ExpressionPosition | undefined {
  if (offset === undefined) {
    return undefined;
  }
  const clamped = Math.max(0, Math.min(offset, source.length));
  const before = source.slice(0, clamped);
  const lineStart = before.lastIndexOf('\n') + 1;
  const line = before.split('\n').length;
  return { offset: clamped, line, column: clamped - lineStart + 1 };
}

/** The deepest chain of comprehension macros nested inside one another, and where it begins. */
function comprehensionNesting(root: ASTNode): { depth: number; deepestAt: number } {
  let deepest = { depth: 0, deepestAt: 0 };
  const enterAt =
    (depth: number) =>
    (node: ASTNode): boolean => {
      if (node.op !== 'rcall' || !comprehensionMacros.has(node.args[0])) return true;
      // Only the body repeats per element; a chained receiver (`l.map(..).filter(..)`) runs once.
      const [, receiver, body] = node.args;
      const inside = depth + 1;
      if (inside > deepest.depth) {
        deepest = { depth: inside, deepestAt: node.pos };
      }
      walkCel(receiver, enterAt(depth));
      walkCel(body, enterAt(inside));
      return false;
    };
  walkCel(root, enterAt(0));
  return deepest;
}
