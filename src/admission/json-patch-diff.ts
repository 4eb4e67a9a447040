/**
 * RFC 6902 JSON Patch computed as the difference of two JSON values: the object the API server
 * sent and the copy the plugins returned. Patches are never written by hand, so what the patch
 * says is by construction what the plugins did.
 *
 * Plugins keep the identity of every part they did not touch, so the walk stops at the first
 * `===` and costs time in proportion to what changed, not to the size of the pod.
 */
import { isJsonObject, jsonEqual } from '../api/types.js';

export type JsonPatchOperation =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string };

/** RFC 6901: `~` becomes `~0` and `/` becomes `~1`, in that order. */
export function escapePointerToken(token: string): string {
  // Most keys need no escaping; two replaceAll calls per key showed in the profile.
  if (!token.includes('~') && !token.includes('/')) {
    return token;
  }
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

export function diffJson(original: unknown, changed: unknown): JsonPatchOperation[] {
  const operations: JsonPatchOperation[] = [];
  diffInto(original, changed, '', operations);
  return operations;
}

function diffInto(original: unknown, changed: unknown, path: string, out: JsonPatchOperation[]): void {
  if (original === changed) {
    return;
  }
  if (Array.isArray(original) && Array.isArray(changed)) {
    diffArrays(original, changed, path, out);
    return;
  }
  if (isJsonObject(original) && isJsonObject(changed)) {
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
        diffInto(original[key], changed[key], childPath, out);
      }
    }
    return;
  }
  if (!jsonEqual(original, changed)) {
    out.push({ op: 'replace', path, value: changed });
  }
}

/**
 * Arrays are matched on their anchors: object elements the plugins kept (the same reference in
 * both arrays, in the same order). Between two anchors, the elements that were removed and the
 * ones that were added are paired by position and diffed into each other (a toleration replaced in
 * place becomes one small operation); the rest are removed or added. So a toleration that merely
 * moved because another was dropped before it is never re-sent: re-sending it would put its
 * numbers through a JavaScript double, and an int64 tolerationSeconds above 2^53 would come back
 * changed.
 */
function diffArrays(original: readonly unknown[], changed: readonly unknown[], path: string, out: JsonPatchOperation[]): void {
  const anchors = findAnchors(original, changed);
  let position = 0;
  let fromOriginal = 0;
  let fromChanged = 0;
  for (const [anchorOriginal, anchorChanged] of [...anchors, [original.length, changed.length] as const]) {
    const removed = anchorOriginal - fromOriginal;
    const added = anchorChanged - fromChanged;
    const paired = Math.min(removed, added);
    for (let k = 0; k < paired; k++) {
      diffInto(original[fromOriginal + k], changed[fromChanged + k], `${path}/${position + k}`, out);
    }
    position += paired;
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
