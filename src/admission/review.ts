/**
 * Reading an `admission.k8s.io/v1` AdmissionReview: bytes in, the request's attributes out, or an
 * AdmissionError that says precisely what is wrong. Nothing here decides anything.
 */
import { Buffer, isUtf8 } from 'node:buffer';
import type { JsonObject } from '../api/types.js';
import { clipText } from '../api/text-bounds.js';
import { isJsonObject } from '../api/types.js';
import type { AdmissionAttributes, Operation, UserInfo } from '../plugins/plugin.js';
import { AdmissionError } from './errors.js';
import { checkObjectShape } from './object-shape.js';

/**
 * The deepest nesting accepted. A Pod is about 15 levels deep and its managedFields mirror that
 * structure once more, so 30-odd levels is the most the API server ever sends; 512 leaves wide
 * room while keeping every recursive walk over the object far from the stack limit (about 10,000
 * frames on Node's default stack).
 */
const maxNestingDepth = 512;

export interface ParsedReview {
  /** The request's apiVersion, echoed in the response (only admission.k8s.io/v1 is accepted). */
  readonly apiVersion: string;
  readonly uid: string;
  readonly attributes: AdmissionAttributes;
}

const operations: readonly Operation[] = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

/**
 * 256 characters: kube-apiserver makes each call's uid with uuid.NewUUID, 36 characters
 * (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/request/admissionreview.go), and the
 * answer must carry it back whole, so a longer one cannot be clipped: it is refused. Seven times
 * a UUID leaves room for a replay or test tool with ids of its own.
 */
export const maxUidChars = 256;

/** A value of the review quoted in a refusal: JSON, clipped (src/api/text-bounds.ts), since whoever reaches the port chooses it. */
function quoted(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(clipText(value)) : clipText(JSON.stringify(value));
}

/**
 * The body as text, refusing bytes that are not UTF-8. isUtf8 (simdutf) then Buffer's decoder,
 * rather than a fatal TextDecoder: the same answer at half the cost (a 2.4 KiB review: 19 µs
 * against 10 µs on the bench machine, about 5 % of an ordinary review's CPU). A leading byte-order
 * mark is dropped, as TextDecoder does.
 */
function decodeUtf8(body: Uint8Array): string {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (!isUtf8(bytes)) throw new AdmissionError('InvalidEncoding', 'request body is not valid UTF-8');
  const text = bytes.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Parses raw bytes (or text) into a review, refusing anything kube-apiserver would not send. */
export function parseAdmissionReview(body: Uint8Array | string): ParsedReview {
  const text = typeof body === 'string' ? body : decodeUtf8(body);
  if (text.trim().length === 0) {
    throw new AdmissionError('EmptyBody', 'request body is empty; expected an admission.k8s.io/v1 AdmissionReview');
  }
  let review: unknown;
  try {
    review = JSON.parse(text);
  } catch (error) {
    throw new AdmissionError('MalformedJSON', `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof review === 'object' && review !== null) {
    if (typeof body !== 'string' && body.length > scanNestingAbove) {
      checkNestingInText(body);
    } else {
      checkNesting(review);
    }
  }
  return readReview(review);
}

/**
 * Above this many bytes the nesting is checked on the body's bytes instead of on the parsed value.
 * Both answer the same (the body has parsed, so it is valid JSON); what differs is the cost. The
 * walk over the value costs per value and is the cheaper one for an ordinary pod (0.7 µs for a
 * 2.5 KiB review, against 3 µs for the scan); the scan costs 1 to 3 ns a byte whatever the shape,
 * while the walk's cost per byte grows with how many values a byte holds: 3 ns for a million `{}`,
 * 38 ns for an object of 330,000 keys, whose keys V8 collects and sorts for every enumeration
 * (120 ms for a 3 MiB pod: bench/RESULTS.md). 16 KiB bounds the walk at about 0.6 ms.
 */
const scanNestingAbove = 16 * 1024;

const openBrace = 0x7b;
const openBracket = 0x5b;
const closeBrace = 0x7d;
const closeBracket = 0x5d;
const quote = 0x22;
const backslash = 0x5c;

/**
 * checkNesting on the body of a value that has parsed (valid JSON): depth is the number of `{`
 * and `[` open outside strings. A string is skipped with indexOf to its closing quote, the first
 * one after an even run of backslashes (in UTF-8 neither byte occurs inside a multi-byte
 * character), so only the bytes between strings are looked at one by one.
 */
function checkNestingInText(bytes: Uint8Array): void {
  let depth = 0;
  let i = 0;
  const end = bytes.length;
  while (i < end) {
    const byte = bytes[i];
    if (byte === quote) {
      let close = bytes.indexOf(quote, i + 1);
      for (;;) {
        // A valid body closes every string; -1 cannot happen, but must not loop.
        if (close === -1) return;
        let backslashes = 0;
        while (bytes[close - 1 - backslashes] === backslash) backslashes++;
        if (backslashes % 2 === 0) break;
        close = bytes.indexOf(quote, close + 1);
      }
      i = close + 1;
      continue;
    }
    if (byte === openBrace || byte === openBracket) {
      depth++;
      if (depth > maxNestingDepth) {
        throw new AdmissionError('NestingTooDeep', `request body is nested deeper than ${maxNestingDepth} levels`);
      }
    } else if (byte === closeBrace || byte === closeBracket) {
      depth--;
    }
    i++;
  }
}

/**
 * Refuses a value nested deeper than maxNestingDepth. V8's JSON.parse itself copes with any depth,
 * so this walks the parsed value: a pod has a few hundred nodes, where scanning its text would
 * cost a step per byte. The walk recurses, but never deeper than the limit it enforces (512
 * frames, far from the stack's end), and allocates nothing.
 */
function checkNesting(value: object, depth = 1): void {
  if (depth > maxNestingDepth) {
    throw new AdmissionError('NestingTooDeep', `request body is nested deeper than ${maxNestingDepth} levels`);
  }
  if (Array.isArray(value)) {
    for (const child of value as unknown[]) {
      if (typeof child === 'object' && child !== null) checkNesting(child, depth + 1);
    }
    return;
  }
  for (const key in value) {
    const child = (value as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null) checkNesting(child, depth + 1);
  }
}

function field(
  parent: JsonObject,
  name: string,
  path: string,
  type: 'string' | 'boolean' | 'object' | 'array',
  required: boolean,
): unknown {
  const value = Object.hasOwn(parent, name) ? parent[name] : undefined;
  if (value === undefined || value === null) {
    if (required) {
      throw new AdmissionError(name === 'uid' ? 'MissingUID' : 'InvalidField', `${path}.${name} is required`);
    }
    return undefined;
  }
  const ok = type === 'object' ? isJsonObject(value) : type === 'array' ? Array.isArray(value) : typeof value === type;
  if (!ok) {
    throw new AdmissionError('InvalidField', `${path}.${name}: expected ${type}, got ${Array.isArray(value) ? 'array' : typeof value}`);
  }
  return value;
}

function readReview(review: unknown): ParsedReview {
  if (!isJsonObject(review)) {
    throw new AdmissionError('NotAdmissionReview', 'request body must be a JSON object: an admission.k8s.io/v1 AdmissionReview');
  }
  const apiVersion = review.apiVersion;
  const kind = review.kind;
  if (kind !== 'AdmissionReview') {
    throw new AdmissionError('NotAdmissionReview', `kind must be "AdmissionReview", got ${kind === undefined ? 'nothing' : quoted(kind)}`);
  }
  if (apiVersion !== 'admission.k8s.io/v1') {
    throw new AdmissionError(
      'UnsupportedVersion',
      `apiVersion ${apiVersion === undefined ? '(missing)' : quoted(apiVersion)} is not supported; this webhook speaks admission.k8s.io/v1 (set admissionReviewVersions: [v1])`,
    );
  }
  if (!isJsonObject(review.request)) {
    throw new AdmissionError('MissingRequest', 'request is required and must be an object');
  }
  const request = review.request;
  const uid = field(request, 'uid', 'request', 'string', true) as string;
  if (uid.length === 0) {
    throw new AdmissionError('MissingUID', 'request.uid must not be empty');
  }
  if (uid.length > maxUidChars) {
    throw new AdmissionError('InvalidField', `request.uid is ${uid.length} characters long; at most ${maxUidChars}`);
  }
  const kindObject = field(request, 'kind', 'request', 'object', true) as JsonObject;
  const resourceObject = field(request, 'resource', 'request', 'object', true) as JsonObject;
  const operation = field(request, 'operation', 'request', 'string', true) as string;
  if (!(operations as readonly string[]).includes(operation)) {
    throw new AdmissionError(
      'InvalidField',
      `request.operation: unsupported value ${quoted(operation)}; expected one of CREATE, UPDATE, DELETE, CONNECT`,
    );
  }
  const group = (field(kindObject, 'group', 'request.kind', 'string', false) as string | undefined) ?? '';
  const version = field(kindObject, 'version', 'request.kind', 'string', true) as string;
  const kindName = field(kindObject, 'kind', 'request.kind', 'string', true) as string;
  const resource = {
    group: (field(resourceObject, 'group', 'request.resource', 'string', false) as string | undefined) ?? '',
    version: field(resourceObject, 'version', 'request.resource', 'string', true) as string,
    resource: field(resourceObject, 'resource', 'request.resource', 'string', true) as string,
  };
  const object = field(request, 'object', 'request', 'object', false) as JsonObject | undefined;
  // A CREATE has no old object and nothing reads one: the API server sends null, and some replay
  // and test tools send {}, whose shape must not decide the answer.
  const oldObject =
    operation === 'CREATE' ? undefined : (field(request, 'oldObject', 'request', 'object', false) as JsonObject | undefined);
  if (object === undefined && (operation === 'CREATE' || operation === 'UPDATE')) {
    throw new AdmissionError('InvalidField', `request.object is required for ${operation}`);
  }
  if (oldObject === undefined && operation === 'UPDATE') {
    throw new AdmissionError('InvalidField', 'request.oldObject is required for UPDATE');
  }
  const subResource = (field(request, 'subResource', 'request', 'string', false) as string | undefined) ?? '';
  if (subResource === '') {
    // Subresources (pods/status, pods/binding) carry other kinds of objects that no plugin reads.
    checkObjectShape(group, kindName, object, 'request.object');
    checkObjectShape(group, kindName, oldObject, 'request.oldObject');
  }
  return {
    apiVersion,
    uid,
    attributes: {
      operation: operation as Operation,
      kind: { group, version, kind: kindName },
      resource,
      subResource,
      namespace: (field(request, 'namespace', 'request', 'string', false) as string | undefined) ?? '',
      name: (field(request, 'name', 'request', 'string', false) as string | undefined) ?? '',
      object,
      oldObject,
      dryRun: (field(request, 'dryRun', 'request', 'boolean', false) as boolean | undefined) ?? false,
      userInfo: readUserInfo(request),
      envelope: readEnvelope(request),
    },
  };
}

/**
 * request.userInfo (authentication.k8s.io/v1 UserInfo). The API server always sends it; every
 * field is optional in the type (omitempty), so an absent one reads as empty.
 */
function readUserInfo(request: JsonObject): UserInfo {
  const userInfo = (field(request, 'userInfo', 'request', 'object', false) as JsonObject | undefined) ?? {};
  const path = 'request.userInfo';
  const groups = field(userInfo, 'groups', path, 'array', false) as unknown[] | undefined;
  const extra = (field(userInfo, 'extra', path, 'object', false) as JsonObject | undefined) ?? {};
  const extraValues: Record<string, readonly string[]> = {};
  for (const [key, values] of Object.entries(extra)) {
    // defineProperty: a key named `__proto__` stays a plain key.
    Object.defineProperty(extraValues, key, { value: stringList(values, `${path}.extra[${quoted(key)}]`), enumerable: true });
  }
  return {
    username: (field(userInfo, 'username', path, 'string', false) as string | undefined) ?? '',
    uid: (field(userInfo, 'uid', path, 'string', false) as string | undefined) ?? '',
    groups: groups === undefined ? [] : stringList(groups, `${path}.groups`),
    extra: extraValues,
  };
}

function stringList(value: unknown, path: string): string[] {
  if (value === null || value === undefined) {
    return [];
  }
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new AdmissionError('InvalidField', `${path}: expected an array of strings`);
  }
  return value;
}

/** The envelope fields admission CEL's `request` has beyond the attributes, as sent. */
const envelopeFields = ['uid', 'requestKind', 'requestResource', 'requestSubResource', 'options'] as const;

function readEnvelope(request: JsonObject): Record<string, unknown> {
  const envelope: Record<string, unknown> = {};
  for (const name of envelopeFields) {
    if (Object.hasOwn(request, name) && request[name] !== null && request[name] !== undefined) {
      envelope[name] = request[name];
    }
  }
  return envelope;
}
