/**
 * RFC 6902 JSON Patch computed as the difference of two JSON values: the object the API server
 * sent and the copy the plugins returned. Patches are never written by hand, so what the patch
 * says is by construction what the plugins did.
 *
 * Plugins keep the identity of every part they did not touch, so the walk stops at the first
 * `===` and costs time in proportion to what changed, not to the size of the pod.
 *
 * ## What the patch costs the API server
 *
 * kube-apiserver applies a webhook's patch with gopkg.in/evanphx/json-patch.v4
 * (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/dispatcher.go:
 * `jsonpatch.DecodePatch(result.Patch)` then `patchObj.Apply(objJS)`, with no bound on the number
 * of operations: the 10,000 of `maxJSONPatchOperations` in endpoints/handlers/patch.go is for a
 * user's PATCH only). In that library (patch.go) every operation splits its path and walks it
 * from the root, and `partialArray.add` and `partialArray.remove` allocate a new slice of the
 * array's length and copy every element pointer into it, even for the last index. So k
 * additions or removals on an array of n elements copy about k·n pointers: a diff that drops
 * 34,999 duplicates of one toleration from 35,000 costs the API server seconds per pod, one that
 * drops 300,000 `{}` minutes. A `replace` costs a map or slice assignment, and the value's bytes
 * are read once when the patch is decoded and once when the result is encoded.
 *
 * Hence two bounds, both applied where the diff is built, bottom-up:
 * - an array that would receive more than `maxArrayOperations` additions or removals (more, for
 *   a short array, while their copies stay `negligibleCopies`) is replaced whole, one `replace`
 *   of the array's new value;
 * - a value whose diff holds more than `maxPatchOperations` operations is replaced whole, or, if
 *   it cannot be (below), its largest changed parts are; so no patch holds more than
 *   `maxPatchOperations` operations.
 *
 * A replaced value is sent again, so its numbers go through a JavaScript double: an integer
 * beyond 2^53 (an int64 `tolerationSeconds` or `runAsUser` of the tenant's choosing) has already
 * lost its last digits in JSON.parse and would come back changed, or out of int64's range. A
 * value holding such a number is never re-sent (`carriesExactly`); when the bounds above cannot
 * be kept without re-sending one, the diff throws, and the review is "could not decide" (500:
 * the mutating webhook's failurePolicy applies, and the validating side judges the pod as it is).
 */
import { isJsonObject, jsonEqual } from '../api/types.js';

export type JsonPatchOperation =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string };

/**
 * The most additions and removals one array receives before it is replaced whole. Each copies
 * the array's element pointers once in evanphx/json-patch (8 bytes an element) and allocates as
 * much, so 8 of them cost 64 bytes an element: less than the API server spends decoding the
 * element itself (a lazyNode of about 56 bytes and a copy of its raw bytes in the patch library,
 * then the typed struct: a Toleration is five strings and a pointer, about 90 bytes), so the
 * patch never costs more than a constant times the object. Every patch a pod written by a person
 * gets adds fewer: DaemonSetTolerations adds at most 7 tolerations to a DaemonSet pod, and the
 * other plugins 1 to 3 each.
 */
export const maxArrayOperations = 8;

/**
 * Element copies too few to matter, whatever the count of operations that make them: 4,096
 * pointers are 32 KiB of memmove, less than the API server spends decoding a pod of 4 KiB. So a
 * short array keeps its exact diff even when it receives more than maxArrayOperations additions
 * (a namespace with a dozen default tolerations, added to a pod's three), and is not re-sent.
 * An array is replaced when its additions and removals k, each copying at most its length n,
 * would exceed `maxArrayOperations · n + negligibleCopies`.
 */
export const negligibleCopies = 4_096;

/**
 * The most operations in one patch: a tenth of the 10,000 kube-apiserver allows a user's JSON
 * patch (`maxJSONPatchOperations`, endpoints/handlers/patch.go, set for the cost of applying one).
 * Each operation costs the API server a path split and walk and a few small decodes, so 1,000 of
 * them cost a few milliseconds. The plugins write more only for objects built to be large (one
 * requirement ANDed into each of 20,000 node selector terms), where one `replace` is cheaper to
 * apply and shorter to audit: the API server records the patch in the audit annotation
 * `patch.webhook.admission.k8s.io/…`.
 */
export const maxPatchOperations = 1_000;

/** RFC 6901: `~` becomes `~0` and `/` becomes `~1`, in that order. */
export function escapePointerToken(token: string): string {
  // Most keys need no escaping; two replaceAll calls per key showed in the profile.
  if (!token.includes('~') && !token.includes('/')) {
    return token;
  }
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** The bounds of a diff: the ones above, always, but for `npm run bench`'s measure of a diff without them. */
export interface PatchBounds {
  readonly maxArrayOperations: number;
  readonly negligibleCopies: number;
  readonly maxPatchOperations: number;
}

const patchBounds: PatchBounds = { maxArrayOperations, negligibleCopies, maxPatchOperations };

/**
 * The patch that turns `original` into `changed`, within the bounds above. Throws when it cannot
 * be bounded without re-sending a number a double cannot carry exactly.
 */
export function diffJson(original: unknown, changed: unknown, bounds: PatchBounds = patchBounds): JsonPatchOperation[] {
  const state: DiffState = { out: [], exact: new WeakMap(), bounds };
  diffInto(original, changed, '', state);
  if (state.out.length > bounds.maxPatchOperations) {
    throw new Error(
      `could not decide: the patch would hold ${state.out.length} operations (at most ${bounds.maxPatchOperations}), and the values that would replace them hold integers beyond 2^53, which cannot be re-sent exactly`,
    );
  }
  return state.out;
}

interface DiffState {
  readonly bounds: PatchBounds;
  /** The operations so far, in order; a subtree's operations are one contiguous run of it. */
  readonly out: JsonPatchOperation[];
  /** carriesExactly's answers for the objects and arrays already walked. */
  readonly exact: WeakMap<object, boolean>;
}

/** One changed child of a value: its run of operations `[start, end)` in `out`, its path and new value. */
interface ChangedChild {
  readonly start: number;
  readonly end: number;
  readonly path: string;
  readonly value: unknown;
}

function diffInto(original: unknown, changed: unknown, path: string, state: DiffState): void {
  if (original === changed) {
    return;
  }
  const { out } = state;
  const start = out.length;
  const children: ChangedChild[] = [];
  if (Array.isArray(original) && Array.isArray(changed)) {
    diffArrays(original, changed, path, state, children);
  } else if (isJsonObject(original) && isJsonObject(changed)) {
    for (const key of Object.keys(original)) {
      if (!Object.hasOwn(changed, key)) {
        out.push({ op: 'remove', path: `${path}/${escapePointerToken(key)}` });
      }
    }
    for (const key of Object.keys(changed)) {
      const childPath = `${path}/${escapePointerToken(key)}`;
      if (!Object.hasOwn(original, key)) {
        out.push({ op: 'add', path: childPath, value: changed[key] });
      } else {
        const childStart = out.length;
        diffInto(original[key], changed[key], childPath, state);
        if (out.length - childStart > 1) {
          children.push({ start: childStart, end: out.length, path: childPath, value: changed[key] });
        }
      }
    }
  } else if (!jsonEqual(original, changed)) {
    out.push({ op: 'replace', path, value: changed });
  }
  boundOperations(state, start, path, changed, children);
}

/**
 * Arrays are matched on their anchors: object elements the plugins kept (the same reference in
 * both arrays, in the same order). Between two anchors, the elements that were removed and the
 * ones that were added are paired by position and diffed into each other (a toleration replaced in
 * place becomes one small operation); the rest are removed or added. So a toleration that merely
 * moved because another was dropped before it is never re-sent: re-sending it would put its
 * numbers through a JavaScript double, and an int64 tolerationSeconds above 2^53 would come back
 * changed. Past the bound on additions and removals (above), the array is replaced instead.
 */
function diffArrays(
  original: readonly unknown[],
  changed: readonly unknown[],
  path: string,
  state: DiffState,
  children: ChangedChild[],
): void {
  const { out } = state;
  const start = out.length;
  const anchors = findAnchors(original, changed);
  const longest = Math.max(original.length, changed.length);
  const { bounds } = state;
  const allowed = bounds.maxArrayOperations + Math.floor(bounds.negligibleCopies / Math.max(longest, 1));
  let copying = 0;
  let position = 0;
  let fromOriginal = 0;
  let fromChanged = 0;
  for (const [anchorOriginal, anchorChanged] of [...anchors, [original.length, changed.length] as const]) {
    const removed = anchorOriginal - fromOriginal;
    const added = anchorChanged - fromChanged;
    const paired = Math.min(removed, added);
    for (let k = 0; k < paired; k++) {
      const childStart = out.length;
      const childPath = `${path}/${position + k}`;
      diffInto(original[fromOriginal + k], changed[fromChanged + k], childPath, state);
      if (out.length - childStart > 1) {
        children.push({ start: childStart, end: out.length, path: childPath, value: changed[fromChanged + k] });
      }
    }
    position += paired;
    copying += removed - paired + (added - paired);
    if (copying > allowed) {
      // Past the bound the rest need not be written out: the array goes whole.
      out.length = start;
      children.length = 0;
      replaceArray(state, path, changed);
      return;
    }
    // Each removal shifts the rest left, so every extra element goes from the same index.
    for (let k = paired; k < removed; k++) {
      out.push({ op: 'remove', path: `${path}/${position}` });
    }
    for (let k = paired; k < added; k++) {
      out.push({ op: 'add', path: `${path}/${position}`, value: changed[fromChanged + k] });
      position++;
    }
    position++; // the anchor itself, unchanged
    fromOriginal = anchorOriginal + 1;
    fromChanged = anchorChanged + 1;
  }
}

/** One `replace` of the array at `path` with its new value, which must be re-sendable exactly. */
function replaceArray(state: DiffState, path: string, value: readonly unknown[]): void {
  if (path === '' || !carriesExactly(value, state.exact)) {
    // The whole document cannot be replaced (evanphx/json-patch's findObject finds no parent for
    // the path ""), and a value with an integer beyond 2^53 cannot be re-sent.
    throw new Error(
      `could not decide: the array at ${JSON.stringify(path)} would take too many additions and removals to patch in place, and cannot be replaced whole: it holds integers beyond 2^53, which cannot be re-sent exactly`,
    );
  }
  state.out.push({ op: 'replace', path, value });
}

/**
 * Keeps the run of operations a value's diff wrote (from `start`) within maxPatchOperations:
 * one `replace` of the value when it can be re-sent exactly, else a `replace` of each of its
 * largest changed children that can, until the run is short enough. What stays too long is left
 * to the enclosing value, and diffJson refuses a patch that is too long at the root.
 */
function boundOperations(state: DiffState, start: number, path: string, value: unknown, children: readonly ChangedChild[]): void {
  const { out } = state;
  const count = out.length - start;
  if (count <= state.bounds.maxPatchOperations) {
    return;
  }
  if (path !== '' && carriesExactly(value, state.exact)) {
    out.length = start;
    out.push({ op: 'replace', path, value });
    return;
  }
  let excess = count - state.bounds.maxPatchOperations;
  const chosen = new Set<ChangedChild>();
  const largestFirst = [...children].sort((a, b) => b.end - b.start - (a.end - a.start));
  for (const child of largestFirst) {
    if (excess <= 0) break;
    if (carriesExactly(child.value, state.exact)) {
      chosen.add(child);
      excess -= child.end - child.start - 1;
    }
  }
  if (chosen.size === 0) {
    return;
  }
  // Children are in the order their runs were written; each chosen run becomes one operation.
  const rebuilt: JsonPatchOperation[] = [];
  let next = start;
  for (const child of children) {
    if (!chosen.has(child)) continue;
    for (let i = next; i < child.start; i++) rebuilt.push(out[i] as JsonPatchOperation);
    rebuilt.push({ op: 'replace', path: child.path, value: child.value });
    next = child.end;
  }
  for (let i = next; i < out.length; i++) rebuilt.push(out[i] as JsonPatchOperation);
  out.length = start;
  for (const operation of rebuilt) out.push(operation);
}

/**
 * Whether `value` survives JSON.stringify and Go's decoding unchanged: every number in it is an
 * integer of at most 2^53 − 1 in magnitude (the request's text held exactly that integer, since
 * every such integer is a double) or a fraction (a float64 field, which Go reads back as the same
 * double). An integer beyond (which only an int64 field holds) may have lost digits in JSON.parse.
 * Each object is walked once per diff.
 */
function carriesExactly(value: unknown, seen: WeakMap<object, boolean>): boolean {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) || !Number.isInteger(value);
  }
  if (typeof value !== 'object' || value === null) {
    return true;
  }
  const known = seen.get(value);
  if (known !== undefined) {
    return known;
  }
  let exact = true;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) {
      if (!carriesExactly(item, seen)) {
        exact = false;
        break;
      }
    }
  } else {
    for (const key in value) {
      if (!carriesExactly((value as Record<string, unknown>)[key], seen)) {
        exact = false;
        break;
      }
    }
  }
  seen.set(value, exact);
  return exact;
}

/** Pairs of indices of object elements present by reference in both arrays, increasing in both. */
function findAnchors(original: readonly unknown[], changed: readonly unknown[]): (readonly [number, number])[] {
  const indexInChanged = new Map<unknown, number>();
  changed.forEach((item, index) => {
    if (typeof item === 'object' && item !== null) {
      // A reference that appears twice cannot anchor: which copy is "the same" is ambiguous.
      indexInChanged.set(item, indexInChanged.has(item) ? -1 : index);
    }
  });
  const anchors: (readonly [number, number])[] = [];
  let last = -1;
  original.forEach((item, index) => {
    const match = typeof item === 'object' && item !== null ? indexInChanged.get(item) : undefined;
    if (match !== undefined && match > last) {
      anchors.push([index, match]);
      last = match;
    }
  });
  return anchors;
}

/** Structural equality of two JSON values, for the admission code that imports it from here. */
export { jsonEqual };
