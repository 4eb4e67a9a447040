/**
 * Lengths for text copied into admission warnings. A pod's strings are whatever the request
 * holds (a 3 MiB label value, 100,000 values in one requirement), and a warning that copies them
 * costs memory and time to build, then is thrown away: kube-apiserver passes on 4,096 characters
 * of warnings per response whole (truncateAtTotalRunes, k8s.io/apiserver/pkg/endpoints/filters/
 * warning.go) and, past that, cuts every warning to its first 256. So long strings are clipped
 * here, with a marker that says how much was left out.
 */
import type { RequirementBounds } from '../api/node-selector-text.js';
import { clipText } from '../api/text-bounds.js';

/**
 * The longest string copied whole. Label values and taint values are at most 63 characters
 * (content.IsLabelValue), so every valid value is shown whole; the usual label keys and node
 * names are shorter than this too. Only strings of invalid or unusual length are clipped.
 */
const maxQuotedChars = 64;

/**
 * The longest list of values shown: two strings of the longest length above and a separator,
 * enough to recognise a list, short of copying it.
 */
const maxListChars = 2 * maxQuotedChars;

/**
 * The longest reason given for one node. A warning names at most five nodes
 * (nodesNamedInWarning): 5 × 700 = 3,500 characters, plus the sentence around them (at most
 * about 300 with clipped names and counts), stays under the 4,096 kube-apiserver passes on whole.
 */
export const maxReasonChars = 700;

/** `text`, or its first `max` characters followed by a marker of how many were left out. */
export function clip(text: string, max: number = maxQuotedChars): string {
  return clipText(text, max);
}

/**
 * Values joined with ", " as a requirement's description shows them, each clipped, stopping before the
 * list grows past maxListChars with a count of the values left out. Costs O(values shown), not
 * O(values): the rest are only counted.
 */
export function listValues(values: readonly string[]): string {
  let out = '';
  for (const [i, value] of values.entries()) {
    const next = clip(value);
    if (i > 0 && out.length + 2 + next.length > maxListChars) {
      return `${out}, …(${values.length - i} more values)`;
    }
    out = i === 0 ? next : `${out}, ${next}`;
  }
  return out;
}

/** A node-selector requirement in a warning's reason: key and operator clipped, the values listed by listValues. */
export const warningBounds: RequirementBounds = { text: (text) => clip(text), values: listValues };
