/**
 * Reading and replacing a pod's `spec.tolerations` without touching anything else, for the
 * mutating plugins. Pure: the input pod is never modified.
 */
import type { Pod, Toleration } from '../api/types.js';

/** The pod's `spec.tolerations`; absent and null read as the empty list, as a nil slice upstream. */
export function tolerationsOf(pod: Pod): readonly Toleration[] {
  return pod.spec?.tolerations ?? [];
}

/**
 * The pod with `tolerations` as its `spec.tolerations`. Only the pod object and its spec are
 * copied: metadata, containers and every toleration object stay shared, so the JSON Patch diff
 * of the result touches the toleration list alone. When `tolerations` holds the pod's own entries
 * (the same objects, in the same order), the pod itself is returned: nothing changed, so no copy
 * and no patch, and a `null` or absent list stays as it was.
 */
export function withTolerations(pod: Pod, tolerations: readonly Toleration[]): Pod {
  const original = tolerationsOf(pod);
  if (tolerations.length === original.length && tolerations.every((t, i) => t === original[i])) {
    return pod;
  }
  // slice and concat allocate a list at its size; a spread grows it as it goes (twice the bytes for a large pod).
  return { ...pod, spec: { ...pod.spec, tolerations: tolerations.slice() } };
}
