/**
 * RFC 6902 JSON Patch computed as the difference of two JSON values: the object the API server
 * sent and the copy the plugins returned. Patches are never written by hand, so what the patch
 * says is by construction what the plugins did.
 *
 * Plugins keep the identity of every part they did not touch, so the walk stops at the first
 * `===` and costs time in proportion to what changed, not to the size of the pod.
 */
export type JsonPatchOperation =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string };

/** RFC 6901: `~` becomes `~0` and `/` becomes `~1`, in that order. */
export function escapePointerToken(token: string): string {
  return token.replaceAll('~', '~0').replaceAll('/', '~1');
}

export function diffJson(original: unknown, changed: unknown): JsonPatchOperation[] {
  const operations: JsonPatchOperation[] = [];
  diffInto(original, changed, '', operations);
  return operations;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function diffInto(original: unknown, changed: unknown, path: string, out: JsonPatchOperation[]): void {
  if (original === changed) {
    return;
  }
  if (Array.isArray(original) && Array.isArray(changed)) {
    // Element by element over the common length, then appends (at their index) or removals
    // (from the end backwards, so every index stays valid while the patch is applied).
    const common = Math.min(original.length, changed.length);
    for (let i = 0; i < common; i++) {
      diffInto(original[i], changed[i], `${path}/${i}`, out);
    }
    for (let i = common; i < changed.length; i++) {
      out.push({ op: 'add', path: `${path}/${i}`, value: changed[i] });
    }
    for (let i = original.length - 1; i >= common; i--) {
      out.push({ op: 'remove', path: `${path}/${i}` });
    }
    return;
  }
  if (isObject(original) && isObject(changed)) {
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

/** Structural equality of two JSON values (key order ignored, as JSON objects are unordered). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
  }
  return false;
}
