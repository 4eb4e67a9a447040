/**
 * A node-selector requirement as tolerator's messages show it: `key Op [v1, v2]`, the key,
 * operator and values as the pod wrote them. One description for every message that names a
 * requirement: the scheduling warnings (compiled and reference matchers, in parentheses there),
 * DedicatedNodes' contradictions, and `tolerator explain`'s changes. The API server never
 * describes a requirement in its own words, so no upstream text is copied.
 *
 * The list of values is shown for `In`, `NotIn`, `Gt` and `Lt`, which require one (an empty list
 * shows as `[]`, which is why such a pod is refused), and for any other operator whose list is not
 * empty; `Exists` and `DoesNotExist` without values show none.
 *
 * A tenant writes the requirement, so what is copied is bounded by the caller's `bounds`: each
 * message site has its own budget (a warning's reasons are shorter than a denial's).
 */
import { clipText, listedItems, spellOut } from './text-bounds.js';
import type { NodeSelectorRequirement } from './types.js';

/** How much of a requirement's strings a description copies. */
export interface RequirementBounds {
  /** The key or the operator, clipped. */
  readonly text: (text: string) => string;
  /** The values, joined with `, `, each clipped and the list cut. */
  readonly values: (values: readonly string[]) => string;
}

/** The bounds of a denial or a note: strings clipped at text-bounds' length, listedItems values shown and the rest counted. */
export const messageBounds: RequirementBounds = {
  text: (text) => clipText(text),
  values: (values) => spellOut(values, (value) => clipText(value), ', ', 'values', listedItems),
};

/** No bound: for the reference matcher, the plain transcription kept as an oracle. */
export const unbounded: RequirementBounds = {
  text: (text) => text,
  values: (values) => values.join(', '),
};

const operatorsWithValues: ReadonlySet<string> = new Set(['In', 'NotIn', 'Gt', 'Lt']);

export function describeRequirement(requirement: NodeSelectorRequirement, bounds: RequirementBounds = messageBounds): string {
  const values = requirement.values ?? [];
  const shown = values.length > 0 || operatorsWithValues.has(requirement.operator) ? ` [${bounds.values(values)}]` : '';
  return `${bounds.text(requirement.key)} ${bounds.text(requirement.operator)}${shown}`;
}
