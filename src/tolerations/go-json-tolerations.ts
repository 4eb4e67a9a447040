/**
 * Go's encoding/json decoding into a list of tolerations, in the two forms tolerator needs:
 *
 * - `unmarshalTolerations(text, goPackage)`: `json.Unmarshal([]byte(text), &[]<pkg>.Toleration{})`
 *   with Go's exact error text, for annotations whose parse error is shown to the user: the pod
 *   annotation `scheduler.alpha.kubernetes.io/tolerations` (GetTolerationsFromPodAnnotations,
 *   `[]core.Toleration`) and PodTolerationRestriction's namespace annotations
 *   (extractNSTolerations, `[]v1.Toleration`); the two name a mistyped field differently (below). Go first scans the whole input for syntax errors
 *   (checkValid), then decodes, keeping only the first type mismatch; both steps are reproduced,
 *   the scan by src/api/go-json.ts and the decoding here.
 * - `decodeParsedTolerations(value)`: the same decoding of an already parsed value (a YAML
 *   configuration file), with exact field names as apimachinery's config decoder matches them, and
 *   the first mismatch returned as data so the caller can name where it is.
 *
 * Both give tolerations as the API server serialises them: fields in declaration order, empty
 * strings and a nil tolerationSeconds left out (omitempty), so a decoded toleration reads like one
 * read back from the API server.
 */
import { clipText } from '../api/text-bounds.js';
import { goJsonNodeFromValue, goValueWord, parseGoJson, type GoJsonNode } from '../api/go-json.js';
import type { Toleration } from '../api/types.js';
import { parseInt64 } from '../api/go-strconv.js';

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

/**
 * The field's name in a type error: encoding/json names a struct field by its JSON name, which is
 * the `json` tag's when there is one and the Go field's name otherwise. v1.Toleration has tags
 * (`tolerationSeconds`); the internal core.Toleration has none, so a pod annotation's error reads
 * `Toleration.TolerationSeconds` (as kube-apiserver v1.35.8 answers, test/e2e/comparison-operators.e2e.ts).
 */
const coreFieldNames: Readonly<Record<keyof Toleration, string>> = {
  key: 'Key',
  operator: 'Operator',
  value: 'Value',
  effect: 'Effect',
  tolerationSeconds: 'TolerationSeconds',
};

/** Go's UnmarshalTypeError.Error() for a decode into `[]<goPackage>.Toleration`. */
export function goUnmarshalTypeError(mismatch: TolerationTypeMismatch, goPackage: GoTolerationPackage): string {
  if (mismatch.index === undefined) {
    return `json: cannot unmarshal ${mismatch.got} into Go value of type []${goPackage}.Toleration`;
  }
  if (mismatch.field === undefined) {
    return `json: cannot unmarshal ${mismatch.got} into Go value of type ${goPackage}.Toleration`;
  }
  const name = goPackage === 'core' ? coreFieldNames[mismatch.field] : mismatch.field;
  return `json: cannot unmarshal ${mismatch.got} into Go struct field Toleration.${name} of type ${goFieldType(mismatch.field, goPackage)}`;
}

/** json.Unmarshal of `text` into `[]<goPackage>.Toleration`, with Go's error text. */
export function unmarshalTolerations(text: string, goPackage: GoTolerationPackage): TolerationUnmarshalling {
  const scanned = parseGoJson(text);
  if (scanned.syntaxError !== undefined) {
    return { error: scanned.syntaxError };
  }
  const decoded = decodeTolerationNodes(scanned.node, 'folded');
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
  return decodeTolerationNodes(goJsonNodeFromValue(value), 'exact');
}

// ---------------------------------------------------------------------------------------------
// Decoding a JSON tree (src/api/go-json.ts) into tolerations, as encoding/json's decoder walks it.

/** 'folded': encoding/json's matching; 'exact': the case-sensitive matching of config files. */
type FieldMatching = 'folded' | 'exact';

/** Toleration's fields in declaration order, the order the API server serialises them in. */
const tolerationFields = ['key', 'operator', 'value', 'effect', 'tolerationSeconds'] as const;

function decodeTolerationNodes(root: GoJsonNode, matching: FieldMatching): TolerationListDecoding {
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
  entries: readonly (readonly [string, GoJsonNode])[],
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
        // A number that is no int64 (1.5, 1e3, 2^63) is named with its literal (clipped when
        // built to be long: text-bounds.ts).
        return { field, got: node.kind === 'number' ? `number ${clipText(node.raw)}` : goValueWord(node) };
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
  const folded = key
    .replace(/\u212A/g, 'k')
    .replace(/\u017F/g, 's')
    .toLowerCase();
  return tolerationFields.find((name) => name.toLowerCase() === folded);
}
