/**
 * PodTolerationRestriction, the kube-apiserver admission plugin (off by default upstream), both
 * mutating and validating:
 * - on CREATE a pod gets its namespace's default tolerations (annotation
 *   `scheduler.alpha.kubernetes.io/defaultTolerations`), or the cluster default when the namespace
 *   sets none;
 * - on CREATE and UPDATE a pod whose QoS class is not BestEffort gets memory-pressure:NoSchedule;
 * - the resulting tolerations must all fall within the namespace whitelist (annotation
 *   `scheduler.alpha.kubernetes.io/tolerationsWhitelist`), or the cluster whitelist when the
 *   namespace sets none.
 *
 * Upstream: plugin/pkg/admission/podtolerationrestriction/admission.go. The kubernetes/kubernetes
 * copies read were old; the current logic was read from sanposhiho/kubernetes
 * 059ce4e8a1d958959595b970acaf846259348518 (k8s-semantics §7), tests from the same fork.
 */
import type { JsonObject, Namespace, Pod, Toleration } from '../api/types.js';
import { TaintKey } from '../api/types.js';
import { mergeTolerations, verifyAgainstWhitelist } from '../tolerations/merge.js';
import { getPodQOS } from '../tolerations/qos.js';
import type { AdmissionAttributes, Denial, MutatingPlugin, MutationOutcome, PluginContext, ValidatingPlugin, ValidationOutcome } from './plugin.js';
import { isPodRequest } from './plugin.js';

export const namespaceDefaultTolerationsAnnotation = 'scheduler.alpha.kubernetes.io/defaultTolerations';
export const namespaceTolerationsWhitelistAnnotation = 'scheduler.alpha.kubernetes.io/tolerationsWhitelist';

/** The plugin's `Configuration` (apis/podtolerationrestriction/v1 types.go): cluster-level lists. */
export interface PodTolerationRestrictionConfig {
  /** Cluster-level default tolerations, used when a namespace has no defaultTolerations annotation. */
  readonly default?: readonly Toleration[];
  /** Cluster-level whitelist, used when a namespace has no tolerationsWhitelist annotation. */
  readonly whitelist?: readonly Toleration[];
}

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

const tolerationFields = ['key', 'operator', 'value', 'effect', 'tolerationSeconds'] as const;

/** The Go type of each field, for error messages (core/v1 Toleration). */
export const goFieldTypes: Readonly<Record<keyof Toleration, string>> = {
  key: 'string',
  operator: 'v1.TolerationOperator',
  value: 'string',
  effect: 'v1.TaintEffect',
  tolerationSeconds: 'int64',
};

/**
 * Decodes an already parsed JSON value into []core/v1.Toleration as Go does, field by field.
 * `fieldNames: 'case-insensitive'` is encoding/json (what extractNSTolerations uses: `"Key"` fills
 * `key`); `'exact'` is the case-sensitive decoder apimachinery uses for config files. Unknown
 * fields are ignored, JSON null leaves a field unset (a null element is an empty toleration), and
 * empty strings are dropped as Go's omitempty would on the way back out, so a decoded toleration
 * reads like one the API server serialises. The first mismatch in document order is reported, as
 * Go reports the earliest.
 */
export function decodeTolerationList(value: unknown, fieldNames: 'case-insensitive' | 'exact'): TolerationListDecoding {
  if (value === null) {
    return { tolerations: null };
  }
  if (!Array.isArray(value)) {
    return { mismatch: { got: jsonKind(value) } };
  }
  const tolerations: Toleration[] = [];
  for (const [index, element] of (value as unknown[]).entries()) {
    if (element === null) {
      tolerations.push({});
      continue;
    }
    if (typeof element !== 'object' || Array.isArray(element)) {
      return { mismatch: { index, got: jsonKind(element) } };
    }
    // Later keys overwrite earlier ones (`"key"` then `"Key"`), as Go assigns in document order.
    const fields = new Map<keyof Toleration, string | number>();
    for (const [name, fieldValue] of Object.entries(element as Record<string, unknown>)) {
      const field = tolerationFields.find((f) => (fieldNames === 'exact' ? f === name : foldFieldName(f) === foldFieldName(name)));
      if (field === undefined || fieldValue === null) {
        continue;
      }
      if (field === 'tolerationSeconds') {
        if (typeof fieldValue !== 'number') {
          return { mismatch: { index, field, got: jsonKind(fieldValue) } };
        }
        // int64 range: [-2^63, 2^63 - 1]; a fraction or an exponent beyond it fails ParseInt.
        if (!Number.isInteger(fieldValue) || fieldValue < -(2 ** 63) || fieldValue >= 2 ** 63) {
          return { mismatch: { index, field, got: `number ${String(fieldValue)}` } };
        }
        fields.set(field, fieldValue);
        continue;
      }
      if (typeof fieldValue !== 'string') {
        return { mismatch: { index, field, got: jsonKind(fieldValue) } };
      }
      fields.set(field, fieldValue);
    }
    tolerations.push(tolerationFromFields(fields));
  }
  return { tolerations };
}

/** Builds the toleration in the canonical field order, leaving out empty strings (omitempty). */
function tolerationFromFields(fields: ReadonlyMap<keyof Toleration, string | number>): Toleration {
  const toleration: Toleration = {};
  for (const field of tolerationFields) {
    const value = fields.get(field);
    if (field === 'tolerationSeconds') {
      if (typeof value === 'number') {
        toleration.tolerationSeconds = value;
      }
    } else if (typeof value === 'string' && value !== '') {
      toleration[field] = value;
    }
  }
  return toleration;
}

/**
 * encoding/json matches object keys to field names under Unicode simple case folding. Among the
 * letters of the five field names only `k` (Kelvin sign U+212A) and `s` (long s U+017F) have
 * non-ASCII fold partners; toLowerCase already maps the Kelvin sign to `k`.
 */
function foldFieldName(name: string): string {
  return name.toLowerCase().replaceAll('\u017f', 's');
}

/** How Go's UnmarshalTypeError names a JSON value. */
function jsonKind(value: unknown): string {
  if (Array.isArray(value)) {
    return 'array';
  }
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'number':
      return 'number';
    case 'boolean':
      return 'bool';
    default:
      return 'object';
  }
}

/** Go's UnmarshalTypeError.Error() for a decode into []v1.Toleration. */
export function goUnmarshalTypeError(mismatch: TolerationTypeMismatch): string {
  if (mismatch.index === undefined) {
    return `json: cannot unmarshal ${mismatch.got} into Go value of type []v1.Toleration`;
  }
  if (mismatch.field === undefined) {
    return `json: cannot unmarshal ${mismatch.got} into Go value of type v1.Toleration`;
  }
  return `json: cannot unmarshal ${mismatch.got} into Go struct field Toleration.${mismatch.field} of type ${goFieldTypes[mismatch.field]}`;
}

export type NamespaceTolerations =
  /** `undefined`: the annotation is unset, fall back to the cluster list. */
  | { readonly tolerations: Toleration[] | undefined; readonly error?: undefined }
  | { readonly tolerations?: undefined; readonly error: string };

/**
 * extractNSTolerations: unset (no annotations, or the key absent) is different from empty. Unset
 * returns `undefined` and the cluster list applies; a value of `""`, `"[]"` or `"null"` returns
 * `[]`, which overrides the cluster list with nothing. A value that is not a JSON array of
 * tolerations is an error; upstream returns the bare encoding/json error, which we prefix with the
 * namespace and annotation so the reader knows where to look.
 *
 * An unknown namespace (`undefined`) reads as unset: the cluster-state source answers `undefined`
 * only for a namespace that does not exist, and the API server's NamespaceLifecycle plugin rejects
 * pods there anyway.
 */
export function extractNamespaceTolerations(namespace: Namespace | undefined, annotation: string): NamespaceTolerations {
  const annotations = namespace?.metadata.annotations ?? {};
  if (!Object.hasOwn(annotations, annotation)) {
    return { tolerations: undefined };
  }
  const text = annotations[annotation] ?? '';
  if (text.length === 0) {
    return { tolerations: [] };
  }
  const where = `namespace ${JSON.stringify(namespace?.metadata.name ?? '')} annotation ${JSON.stringify(annotation)}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    // Go's scanner words its syntax errors differently (e.g. "invalid character 'x' looking for
    // beginning of value"); the position V8 gives is the useful part.
    return { error: `${where}: invalid JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const decoded = decodeTolerationList(parsed, 'case-insensitive');
  if (decoded.mismatch !== undefined) {
    return { error: `${where}: ${goUnmarshalTypeError(decoded.mismatch)}` };
  }
  // A JSON null decodes to Go's nil slice, which extractNSTolerations then copies into an empty,
  // non-nil one: an override with nothing, like "".
  return { tolerations: decoded.tolerations ?? [] };
}

/**
 * The memory-pressure toleration for pods that are not BestEffort. The kubelet evicts BestEffort
 * pods first under memory pressure, and the node's memory-pressure:NoSchedule taint keeps new
 * BestEffort pods off the node; a pod with memory requests is admitted there and survives, so
 * it tolerates the taint.
 */
function memoryPressureToleration(): Toleration {
  return { key: TaintKey.NodeMemoryPressure, operator: 'Exists', effect: 'NoSchedule' };
}

/** Same toleration, reading absent and '' (and absent and null seconds) alike, as Go's zero values. */
function sameToleration(a: Toleration, b: Toleration): boolean {
  return (
    (a.key ?? '') === (b.key ?? '') &&
    (a.operator ?? '') === (b.operator ?? '') &&
    (a.value ?? '') === (b.value ?? '') &&
    (a.effect ?? '') === (b.effect ?? '') &&
    (a.tolerationSeconds ?? null) === (b.tolerationSeconds ?? null)
  );
}

export function createPodTolerationRestriction(config: PodTolerationRestrictionConfig = {}) {
  const handles = (attributes: AdmissionAttributes): boolean =>
    isPodRequest(attributes) && (attributes.operation === 'CREATE' || attributes.operation === 'UPDATE');

  /**
   * Validate: the pod's tolerations must each be covered by a whitelist entry. Upstream returns
   * this as a plain `fmt.Errorf`, not admission.NewForbidden (so are the annotation errors), and
   * kube-apiserver turns an error that is not an APIStatus into a 500 with reason Unknown
   * (responsewriters.ErrorToAPIStatus, default case). A webhook answering 500 would trip its
   * failurePolicy instead of refusing, so the refusal is sent as what it means, 403 Forbidden,
   * with upstream's text.
   */
  function whitelistDenial(tolerations: readonly Toleration[], namespace: Namespace | undefined): Denial | undefined {
    if (tolerations.length === 0) {
      return undefined;
    }
    const fromNamespace = extractNamespaceTolerations(namespace, namespaceTolerationsWhitelistAnnotation);
    if (fromNamespace.error !== undefined) {
      return { reason: 'Forbidden', message: fromNamespace.error };
    }
    let whitelist: readonly Toleration[] = fromNamespace.tolerations ?? [];
    let scope = 'namespace';
    if (fromNamespace.tolerations === undefined) {
      whitelist = config.whitelist ?? [];
      scope = 'cluster';
    }
    if (whitelist.length > 0 && !verifyAgainstWhitelist(tolerations, whitelist)) {
      return {
        reason: 'Forbidden',
        message: `pod tolerations (possibly merged with namespace default tolerations) conflict with its ${scope} whitelist`,
      };
    }
    return undefined;
  }

  return {
    name: 'PodTolerationRestriction',
    handles,

    admit(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): MutationOutcome {
      if (!handles(attributes)) {
        return { object };
      }
      const pod = object as Pod;
      const original = pod.spec?.tolerations ?? [];

      const extra: Toleration[] = [];
      if (attributes.operation === 'CREATE') {
        const fromNamespace = extractNamespaceTolerations(context.namespace, namespaceDefaultTolerationsAnnotation);
        if (fromNamespace.error !== undefined) {
          return { denial: { reason: 'Forbidden', message: fromNamespace.error } };
        }
        // Copies: the pod must not share objects with the configuration.
        extra.push(...(fromNamespace.tolerations ?? config.default ?? []).map((t) => ({ ...t })));
      }
      if (getPodQOS(pod, context.gates) !== 'BestEffort') {
        extra.push(memoryPressureToleration());
      }

      let tolerations: readonly Toleration[] = original;
      if (extra.length > 0) {
        // Pod first: on equal standing the pod's own entry survives (MergeTolerations).
        const merged = mergeTolerations(original, extra).map((t) => original.find((o) => sameToleration(o, t)) ?? t);
        if (attributes.operation === 'CREATE') {
          tolerations = merged;
        } else {
          // On UPDATE only what the merge adds is appended. MergeTolerations also drops a pod
          // toleration that another one covers (even two of the pod's own), and the API server
          // forbids an UPDATE that removes or rewrites a toleration ("existing toleration can not be
          // modified except its tolerationSeconds"): upstream would make such a pod un-updatable
          // once it is not BestEffort. Keeping every existing entry keeps the pod updatable.
          const added = merged.filter((t) => !original.some((o) => sameToleration(o, t)));
          tolerations = [...original, ...added];
        }
      }

      // Upstream's Admit ends with Validate: the merged list must be within the whitelist.
      const denial = whitelistDenial(tolerations, context.namespace);
      if (denial !== undefined) {
        return { denial };
      }
      const unchanged = tolerations.length === original.length && tolerations.every((t, i) => t === original[i]);
      if (unchanged) {
        return { object };
      }
      const mutated: Pod = { ...pod, spec: { ...pod.spec, tolerations: [...tolerations] } };
      return { object: mutated };
    },

    validate(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): ValidationOutcome {
      if (!handles(attributes)) {
        return {};
      }
      const pod = object as Pod;
      const denial = whitelistDenial(pod.spec?.tolerations ?? [], context.namespace);
      return denial === undefined ? {} : { denial };
    },
  } satisfies MutatingPlugin & ValidatingPlugin;
}
