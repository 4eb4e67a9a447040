/**
 * Checks the JSON types of every field the plugins read, so that the pure code can trust
 * src/api/types.ts and a hostile body gets a precise 400 instead of a crash deep in a plugin.
 * kube-apiserver only ever sends objects that decoded into its Go types, so none of these
 * checks can refuse a request the API server really sends.
 */
import { AdmissionError } from './errors.js';
import { isJsonObject } from '../api/types.js';

type Shape = (
  | { readonly type: 'string' | 'boolean' | 'integer' | 'int32' | 'quantity' }
  | { readonly type: 'object'; readonly fields: readonly (readonly [string, Shape])[] }
  | { readonly type: 'map'; readonly values: Shape }
  | { readonly type: 'array'; readonly items: Shape }
) & { readonly nullable?: boolean };

const string: Shape = { type: 'string' };
const boolean: Shape = { type: 'boolean' };
/** Go's int64 (tolerationSeconds). */
const integer: Shape = { type: 'integer' };
/** Go's int32 (a preferred term's weight). */
const int32: Shape = { type: 'int32' };
/** resource.Quantity marshals as a string; a bare JSON number is accepted by its decoder too. */
const quantity: Shape = { type: 'quantity' };
/** Fields kept as a list, so a check walks it without building one per object it visits. */
const object = (fields: Record<string, Shape>): Shape => ({ type: 'object', fields: Object.entries(fields) });
const map = (values: Shape): Shape => ({ type: 'map', values });
const array = (items: Shape): Shape => ({ type: 'array', items });
/** A field that src/api/types.ts declares `| null`: the plugins handle null there. */
const nullable = (shape: Shape): Shape => ({ ...shape, nullable: true });

const toleration = object({ key: string, operator: string, value: string, effect: string, tolerationSeconds: nullable(integer) });
const resources = object({ requests: map(quantity), limits: map(quantity) });
const container = object({ name: string, resources });
const requirement = object({ key: string, operator: string, values: array(string) });
const term = object({ matchExpressions: array(requirement), matchFields: array(requirement) });

const objectMeta = object({
  name: string,
  generateName: string,
  namespace: string,
  labels: map(string),
  annotations: map(string),
  ownerReferences: array(object({ apiVersion: string, kind: string, name: string, uid: string, controller: boolean })),
});

const podSpec = object({
  containers: array(container),
  initContainers: array(container),
  ephemeralContainers: array(container),
  tolerations: nullable(array(toleration)),
  hostNetwork: boolean,
  nodeName: string,
  nodeSelector: map(string),
  runtimeClassName: nullable(string),
  resources,
  affinity: object({
    nodeAffinity: object({
      requiredDuringSchedulingIgnoredDuringExecution: object({ nodeSelectorTerms: array(term) }),
      preferredDuringSchedulingIgnoredDuringExecution: array(object({ weight: int32, preference: term })),
    }),
  }),
});

const podTemplateSpec = object({ metadata: objectMeta, spec: podSpec });

/** resource.k8s.io/v1 DeviceToleration (and v1beta2's, the same). */
const deviceToleration = object({ key: string, operator: string, value: string, effect: string, tolerationSeconds: nullable(integer) });
const deviceTolerations = nullable(array(deviceToleration));
/** ResourceClaimSpec as far as the device plugins read it: each request's `exactly` or `firstAvailable` tolerations. */
const resourceClaimSpec = object({
  devices: object({
    requests: nullable(
      array(
        object({
          name: string,
          exactly: nullable(object({ tolerations: deviceTolerations })),
          firstAvailable: nullable(array(object({ name: string, tolerations: deviceTolerations }))),
        }),
      ),
    ),
  }),
});
/** DeviceTaintRule (v1alpha3, v1beta2, v1): the selector, the taint and the status conditions DeviceTaintRuleSafety reads. */
const deviceTaintRule = object({
  metadata: objectMeta,
  spec: object({
    deviceSelector: nullable(object({ driver: nullable(string), pool: nullable(string), device: nullable(string) })),
    taint: object({ key: string, value: string, effect: string }),
  }),
  status: object({ conditions: nullable(array(object({ type: string, observedGeneration: integer }))) }),
});

/** The shapes by `group/kind` of the objects tolerator reads; other kinds are passed through unread. */
const shapesByKind: Readonly<Record<string, Shape>> = {
  '/Pod': object({ metadata: objectMeta, spec: podSpec, status: object({ qosClass: string }) }),
  '/PodTemplate': object({ metadata: objectMeta, template: podTemplateSpec }),
  '/ReplicationController': object({ metadata: objectMeta, spec: object({ template: podTemplateSpec }) }),
  'apps/Deployment': object({ metadata: objectMeta, spec: object({ template: podTemplateSpec }) }),
  'apps/ReplicaSet': object({ metadata: objectMeta, spec: object({ template: podTemplateSpec }) }),
  'apps/StatefulSet': object({ metadata: objectMeta, spec: object({ template: podTemplateSpec }) }),
  'apps/DaemonSet': object({ metadata: objectMeta, spec: object({ template: podTemplateSpec }) }),
  'batch/Job': object({ metadata: objectMeta, spec: object({ template: podTemplateSpec }) }),
  'batch/CronJob': object({
    metadata: objectMeta,
    spec: object({ jobTemplate: object({ metadata: objectMeta, spec: object({ template: podTemplateSpec }) }) }),
  }),
  '/Namespace': object({ metadata: objectMeta }),
  'resource.k8s.io/ResourceClaim': object({ metadata: objectMeta, spec: resourceClaimSpec }),
  'resource.k8s.io/ResourceClaimTemplate': object({ metadata: objectMeta, spec: object({ spec: resourceClaimSpec }) }),
  'resource.k8s.io/DeviceTaintRule': deviceTaintRule,
};

/**
 * Throws an InvalidField AdmissionError naming the first field whose JSON type is wrong. Every
 * object the API server sends has `metadata` (policies and plugins read its labels and name), so
 * one without it is refused too.
 *
 * Two walks over the same shape in the same order: `conforms` answers yes or no and allocates
 * nothing, which is all a review the API server sent ever needs; only when it says no does
 * `check` walk again, building the path of each field it enters, to name the first one that is
 * wrong. Building a path per field for every review was a tenth of the parse's cost for an
 * ordinary pod, and for a pod of a million tolerations a million strings (bench/RESULTS.md).
 */
export function checkObjectShape(group: string, kind: string, value: unknown, path: string): void {
  const shape = shapesByKind[`${group}/${kind}`];
  if (shape === undefined || value === undefined) {
    return;
  }
  if (!conforms(shape, value)) {
    check(shape, value, path);
    // The two walks disagree: a bug here, never the request's fault (500, "could not decide").
    throw new Error(`internal error: ${path} does not conform to its shape, but no field was found wrong`);
  }
  if (!isJsonObject((value as Record<string, unknown>).metadata)) {
    throw new AdmissionError('InvalidField', `${path}.metadata is required`);
  }
}

/** Whether `value` has `shape`: check's rules, answered without a path or an exception. */
function conforms(shape: Shape, value: unknown): boolean {
  if (value === undefined) {
    return true;
  }
  if (value === null) {
    return shape.nullable === true;
  }
  switch (shape.type) {
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value) && value <= 2 ** 63 && value >= -(2 ** 63);
    case 'int32':
      return typeof value === 'number' && Number.isInteger(value) && value <= 2 ** 31 - 1 && value >= -(2 ** 31);
    case 'quantity':
      return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
    case 'object': {
      if (!isJsonObject(value)) return false;
      const fields = shape.fields;
      for (let i = 0; i < fields.length; i++) {
        // Indexed, not destructured: a destructuring runs the iterator protocol, an object per
        // field, until the optimising compiler has seen the loop.
        const entry = fields[i] as readonly [string, Shape];
        const field = entry[0];
        if (Object.hasOwn(value, field) && !conforms(entry[1], value[field])) return false;
      }
      return true;
    }
    case 'map': {
      if (!isJsonObject(value)) return false;
      const values = shape.values;
      // for…in visits the same keys as Object.entries here (JSON.parse makes only own,
      // enumerable properties on a prototype that has none), without an array of pairs.
      for (const key in value) {
        if (!conforms(values, value[key])) return false;
      }
      return true;
    }
    case 'array': {
      if (!Array.isArray(value)) return false;
      const items = shape.items;
      for (let i = 0; i < value.length; i++) {
        if (!conforms(items, value[i])) return false;
      }
      return true;
    }
  }
}
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function fail(path: string, expected: string, value: unknown): never {
  throw new AdmissionError('InvalidField', `${path}: expected ${expected}, got ${describe(value)}`);
}

/** conforms' walk again, with the path of every field, to throw at the first one that is wrong. */
function check(shape: Shape, value: unknown, path: string): void {
  if (value === undefined) {
    return;
  }
  if (value === null) {
    // kube-apiserver re-encodes the objects it decoded: it omits empty fields (omitempty) and
    // never sends null for them, so a null there comes from some other client and is refused
    // rather than handled in every plugin. Only the fields typed `| null` may be null.
    if (shape.nullable === true) {
      return;
    }
    fail(path, shape.type, value);
  }
  switch (shape.type) {
    case 'string':
      if (typeof value !== 'string') fail(path, 'string', value);
      return;
    case 'boolean':
      if (typeof value !== 'boolean') fail(path, 'boolean', value);
      return;
    case 'integer':
      // int64: [-2^63, 2^63 - 1]. 2^63 - 1 itself parses to the double 2^63, so only values above
      // that are certainly out of range (Go's decoder would refuse them).
      if (typeof value !== 'number' || !Number.isInteger(value)) fail(path, 'integer', value);
      if (value > 2 ** 63 || value < -(2 ** 63)) fail(path, 'integer within int64', value);
      return;
    case 'int32':
      if (typeof value !== 'number' || !Number.isInteger(value)) fail(path, 'integer', value);
      if (value > 2 ** 31 - 1 || value < -(2 ** 31)) fail(path, 'integer within int32', value);
      return;
    case 'quantity':
      if (typeof value !== 'string' && (typeof value !== 'number' || !Number.isFinite(value)))
        fail(path, 'quantity (string or number)', value);
      return;
    case 'object':
      if (!isJsonObject(value)) fail(path, 'object', value);
      for (const [field, fieldShape] of shape.fields) {
        if (Object.hasOwn(value, field)) {
          check(fieldShape, value[field], `${path}.${field}`);
        }
      }
      return;
    case 'map':
      if (!isJsonObject(value)) fail(path, 'object', value);
      for (const [key, entry] of Object.entries(value)) {
        check(shape.values, entry, `${path}[${JSON.stringify(key)}]`);
      }
      return;
    case 'array':
      if (!Array.isArray(value)) fail(path, 'array', value);
      value.forEach((item, index) => {
        check(shape.items, item, `${path}[${index}]`);
      });
      return;
  }
}
