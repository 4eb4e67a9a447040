/**
 * Reading fields of an object whose shape no one has checked (a DeviceTaintRule as the webhook
 * receives it, before any type check): an own property or undefined, a string or ''.
 */

/** `value[key]` when `value` is a plain object that has `key` as its own property; else undefined. */
export function ownField(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.hasOwn(value, key)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/** A string field as Go decodes an absent one: the string, or ''. */
export function stringField(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
