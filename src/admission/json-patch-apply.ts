/**
 * The JSON Patch tolerator sends, applied as the API server applies it: how `tolerator review`
 * shows the patched object, and how `admitObject` (src/admission/admit-object.ts) gives the
 * object after admission. Hand-written rather than a JSON Patch library because it only has to
 * apply what src/admission/json-patch-diff.ts writes, and the runtime carries no patch library
 * (the tests check these patches with fast-json-patch and the API server's own library).
 */
import type { JsonPatchOperation } from './json-patch-diff.js';

/**
 * Applies the patches the pipeline produces (src/admission/json-patch-diff.ts: add, replace and
 * remove, array additions at the end, removals from the end) to a copy of `document`.
 */
export function applyJsonPatch(document: unknown, patch: readonly JsonPatchOperation[]): unknown {
  let root = structuredClone(document);
  for (const operation of patch) {
    const tokens = operation.path
      .split('/')
      .slice(1)
      .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = tokens.pop();
    if (last === undefined) {
      root = operation.op === 'remove' ? undefined : structuredClone(operation.value);
      continue;
    }
    let parent: unknown = root;
    for (const token of tokens) {
      parent = (parent as Record<string, unknown>)[token];
    }
    if (Array.isArray(parent)) {
      const index = Number(last);
      if (operation.op === 'add') parent.splice(index, 0, structuredClone(operation.value));
      else if (operation.op === 'replace') parent[index] = structuredClone(operation.value);
      else parent.splice(index, 1);
    } else if (parent !== null && typeof parent === 'object') {
      const record = parent as Record<string, unknown>;
      if (operation.op === 'remove') Reflect.deleteProperty(record, last);
      else record[last] = structuredClone(operation.value);
    } else {
      throw new Error(`cannot apply ${operation.op} at ${operation.path}: no such parent`);
    }
  }
  return root;
}
