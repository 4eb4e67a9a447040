/**
 * What an API server answered to a dry-run pod create, and how two answers compare: equal, equal
 * but for one of the deliberate differences (each named, listed in docs/kubernetes-rules.md and
 * the README), or different. Anything else is a failure of the differential suite.
 */
import * as k8s from '@kubernetes/client-node';
import { apiError, createObject, type Manifest } from '../cluster/tolerator-on-cluster.js';

export type Answer =
  | { readonly stored: { readonly tolerations: unknown; readonly nodeSelector: unknown } }
  | {
      readonly refused: {
        readonly code: number;
        readonly reason: string | undefined;
        readonly message: string | undefined;
        /** The Status's `details`: name, kind, causes. */
        readonly details: unknown;
      };
    };

/** Creates `pod` with `?dryRun=All` and says what was stored (tolerations, nodeSelector) or how it was refused. */
export async function answerOf(objects: k8s.KubernetesObjectApi, pod: Manifest): Promise<Answer> {
  try {
    const stored = await createObject(objects, pod, 'All');
    const spec = stored.spec as { tolerations?: unknown; nodeSelector?: unknown };
    return { stored: { tolerations: spec.tolerations, nodeSelector: spec.nodeSelector } };
  } catch (error) {
    if (!(error instanceof k8s.ApiException)) throw error;
    const { code, status } = apiError(error);
    return { refused: { code, reason: status.reason, message: status.message, details: status.details } };
  }
}

/** The text kube-apiserver puts before a mutating webhook's denial message. */
export const deniedByMutate = 'admission webhook "mutate.tolerator.dev" denied the request: ';

/**
 * The deliberate differences a subject (tolerator in place of the in-tree plugins) may show, by
 * name. Each takes the reference's answer and returns the subject's answer it allows, or undefined
 * where it does not apply.
 */
export const DELIBERATE_DIFFERENCES = {
  /**
   * A refusal that reaches the user through a webhook: kube-apiserver writes the denial behind
   * `admission webhook "…" denied the request: ` and keeps the code, reason and details. Every
   * webhook's refusals read so; tolerator cannot send the in-tree text bare.
   */
  'refused-through-the-webhook': (reference: Answer): Answer | undefined => {
    if (!('refused' in reference) || reference.refused.code === 500) return undefined;
    return { refused: { ...reference.refused, message: `${deniedByMutate}${reference.refused.message ?? ''}` } };
  },
  /**
   * The in-tree PodTolerationRestriction and PodNodeSelector return a whitelist violation and a
   * namespace annotation that does not parse as plain Go errors: 500, no reason. A webhook that
   * answered 500 would hand the pod to its failurePolicy (Ignore: admitted unchecked), so
   * tolerator refuses with 403 Forbidden and the same text, an annotation error prefixed with the
   * namespace and the annotation's name.
   */
  'plain-error-as-403': (reference: Answer): Answer | undefined => {
    if (!('refused' in reference) || reference.refused.code !== 500 || reference.refused.reason !== undefined) return undefined;
    return {
      refused: { code: 403, reason: 'Forbidden', message: `${deniedByMutate}${reference.refused.message ?? ''}`, details: undefined },
    };
  },
} as const;

export type DeliberateDifference = keyof typeof DELIBERATE_DIFFERENCES;

const annotationErrorPrefix =
  /^(admission webhook "mutate\.tolerator\.dev" denied the request: )namespace "[^"]*" annotation "scheduler\.alpha\.kubernetes\.io\/(?:defaultTolerations|tolerationsWhitelist|node-selector)": /;

/** JSON with sorted keys, so that two answers compare by value and print alike. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

/**
 * How `subject`'s answer compares with `reference`'s: `equal`, the name of the deliberate
 * difference that explains it (with `allowed` differences only), or `different`. Array order
 * counts (tolerations are compared in order).
 */
export function compareAnswers(
  reference: Answer,
  subject: Answer,
  allowed: readonly DeliberateDifference[],
): 'equal' | DeliberateDifference | 'different' {
  if (canonical(reference) === canonical(subject)) return 'equal';
  for (const name of allowed) {
    const expected = DELIBERATE_DIFFERENCES[name](reference);
    if (expected === undefined) continue;
    if (canonical(expected) === canonical(subject)) return name;
    // tolerator names the namespace and the annotation before a decoding or parse error.
    if (name === 'plain-error-as-403' && 'refused' in subject && subject.refused.message !== undefined) {
      const unprefixed = { refused: { ...subject.refused, message: subject.refused.message.replace(annotationErrorPrefix, '$1') } };
      if (unprefixed.refused.message !== subject.refused.message && canonical(expected) === canonical(unprefixed)) return name;
    }
  }
  return 'different';
}

/**
 * Two values as indented JSON in two columns, each line of the right marked `|` where it differs
 * from the left's line, for a shrunk failure: what each API server answered, side by side.
 */
export function sideBySide(leftTitle: string, left: unknown, rightTitle: string, right: unknown): string {
  const split = (value: unknown): string[] => (JSON.stringify(value, null, 2) ?? 'undefined').split('\n');
  const a = [leftTitle, '-'.repeat(leftTitle.length), ...split(left)];
  const b = [rightTitle, '-'.repeat(rightTitle.length), ...split(right)];
  const width = Math.max(...a.map((line) => line.length));
  const lines: string[] = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const l = a[i] ?? '';
    const r = b[i] ?? '';
    lines.push(`${l.padEnd(width)} ${i >= 2 && l !== r ? '|' : ' '} ${r}`);
  }
  return lines.join('\n');
}
