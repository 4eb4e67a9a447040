/**
 * What applying a JSON Patch costs kube-apiserver, counted as work rather than timed: a model of
 * gopkg.in/evanphx/json-patch.v4 (patch.go), the library the mutating webhook dispatcher applies a
 * webhook's patch with (`jsonpatch.DecodePatch`, then `Patch.Apply`).
 *
 * What the library does per operation, and what the model counts for it:
 * - `findObject` splits the path and walks it from the root: the path's bytes (`pathBytes`);
 * - `partialArray.add` and `partialArray.remove` allocate a slice of the array's new length and
 *   copy every element pointer into it, whatever the index (8 bytes each on a 64-bit build): the
 *   array's length before the operation times 8 (`copiedBytes`);
 * - an operation's value is kept as raw bytes, decoded with the patch and encoded into the
 *   result once: its JSON length (`valueBytes`).
 * A `replace` or an object's `add`/`remove` is a map or slice assignment, counted by its path and
 * value only. The object's own decode and encode, which every patch pays once, is left out.
 *
 * The model applies the patch to a copy (arrays with splice), so it also checks that every path
 * exists where the library would look for it.
 */
import type { JsonPatchOperation } from '../../src/admission/json-patch-diff.js';

export interface PatchCost {
  readonly operations: number;
  readonly pathBytes: number;
  readonly copiedBytes: number;
  readonly valueBytes: number;
  /** All of it: the bytes the API server reads, walks or copies to apply the patch. */
  readonly total: number;
  /** The document after the patch. */
  readonly result: unknown;
}

const pointerBytes = 8;

export function evanphxCost(document: unknown, patch: readonly JsonPatchOperation[]): PatchCost {
  const root: { doc: unknown } = { doc: structuredClone(document) };
  let pathBytes = 0;
  let copiedBytes = 0;
  let valueBytes = 0;
  for (const operation of patch) {
    pathBytes += Buffer.byteLength(operation.path);
    if (operation.op !== 'remove') valueBytes += Buffer.byteLength(JSON.stringify(operation.value));
    const tokens = operation.path
      .split('/')
      .slice(1)
      .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = tokens.pop();
    if (last === undefined) throw new Error(`evanphx/json-patch cannot apply ${operation.op} to the whole document`);
    let parent: unknown = root.doc;
    for (const token of tokens) {
      if (typeof parent !== 'object' || parent === null) throw new Error(`${operation.path}: no such parent`);
      parent = (parent as Record<string, unknown>)[token];
    }
    if (Array.isArray(parent)) {
      const index = Number(last);
      if (!Number.isInteger(index) || index < 0 || index > parent.length) throw new Error(`${operation.path}: no such index`);
      if (operation.op === 'replace') {
        parent[index] = structuredClone(operation.value);
      } else {
        copiedBytes += parent.length * pointerBytes;
        if (operation.op === 'add') parent.splice(index, 0, structuredClone(operation.value));
        else parent.splice(index, 1);
      }
    } else if (typeof parent === 'object' && parent !== null) {
      const record = parent as Record<string, unknown>;
      if (operation.op === 'remove') Reflect.deleteProperty(record, last);
      else record[last] = structuredClone(operation.value);
    } else {
      throw new Error(`${operation.path}: no such parent`);
    }
  }
  return {
    operations: patch.length,
    pathBytes,
    copiedBytes,
    valueBytes,
    total: pathBytes + copiedBytes + valueBytes,
    result: root.doc,
  };
}
