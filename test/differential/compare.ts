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

type Refusal = Extract<Answer, { refused: unknown }>['refused'];
const refusalOf = (answer: Answer): Refusal | undefined => ('refused' in answer ? answer.refused : undefined);

/** tolerator names the namespace and the annotation before an annotation's decoding or parse error. */
const annotationErrorPrefix =
  /^namespace "[^"]*" annotation "scheduler\.alpha\.kubernetes\.io\/(?:defaultTolerations|tolerationsWhitelist|node-selector)": /;

/** `spec.tolerations[N]` with the index left out, for comparing two validation answers that name different entries. */
const withoutTolerationIndex = (text: string): string => text.replace(/spec\.tolerations\[\d+\]/g, 'spec.tolerations[*]');

/**
 * The deliberate differences, by name: each says whether the answer of an API server with
 * tolerator (`got`) differs from the in-tree plugins' (`reference`) in that way and no other. Each
 * is listed in the README and docs/kubernetes-rules.md and held by a test of
 * admission.differential.ts that names it.
 */
export const DELIBERATE_DIFFERENCES = {
  /**
   * A refusal that reaches the user through a webhook: kube-apiserver writes the denial behind
   * `admission webhook "…" denied the request: ` and keeps the code, reason and details. Every
   * webhook's refusals read so; tolerator cannot send the in-tree text bare.
   */
  'refused-through-the-webhook': (reference: Answer, got: Answer): boolean => {
    const want = refusalOf(reference);
    if (want === undefined || want.code === 500) return false;
    return canonical({ refused: { ...want, message: `${deniedByMutate}${want.message ?? ''}` } }) === canonical(got);
  },
  /**
   * The in-tree PodTolerationRestriction and PodNodeSelector return a whitelist violation and a
   * namespace annotation that does not parse as plain Go errors: 500, no reason. A webhook that
   * answered 500 would hand the pod to its failurePolicy (Ignore: admitted unchecked), so
   * tolerator refuses with 403 Forbidden and the same text, an annotation error prefixed with the
   * namespace and the annotation's name.
   */
  'plain-error-as-403': (reference: Answer, got: Answer): boolean => {
    const want = refusalOf(reference);
    const have = refusalOf(got);
    if (want === undefined || have === undefined || want.code !== 500 || want.reason !== undefined) return false;
    if (have.code !== 403 || have.reason !== 'Forbidden' || have.details !== undefined || have.message === undefined) return false;
    if (!have.message.startsWith(deniedByMutate)) return false;
    const text = have.message.slice(deniedByMutate.length);
    return text === want.message || text.replace(annotationErrorPrefix, '') === want.message;
  },
  /**
   * A namespace default toleration whose tolerationSeconds is an integer beyond 2^53 - 1: the
   * in-tree plugin stores it exactly (an int64); tolerator has it only as a rounded double and
   * refuses the pod rather than store another number, after the whitelist as upstream checks it:
   * the reference stored the pod, or its validation (after every mutating plugin) refused it.
   */
  'default-seconds-beyond-2^53': (reference: Answer, got: Answer): boolean => {
    const have = refusalOf(got);
    const pattern =
      /^namespace "[^"]*" annotation "scheduler\.alpha\.kubernetes\.io\/defaultTolerations": toleration \d+: tolerationSeconds beyond 9007199254740991 \(2\^53 - 1\) cannot be added exactly$/;
    if (have?.code !== 403 || have.reason !== 'Forbidden' || !pattern.test((have.message ?? '').replace(deniedByMutate, ''))) return false;
    if ('stored' in reference) {
      const tolerations = (reference.stored.tolerations ?? []) as { tolerationSeconds?: number }[];
      return tolerations.some(
        (toleration) => toleration.tolerationSeconds !== undefined && !Number.isSafeInteger(toleration.tolerationSeconds),
      );
    }
    return reference.refused.code === 422;
  },
  /**
   * Upstream's MergeTolerations is not idempotent: two tolerations that each cover the other
   * (equal but for a tolerationSeconds, which only NoExecute honours) are resolved by their order,
   * and a second merge of the result moves the survivor behind the next. Such a pair always holds
   * a toleration the API server refuses (tolerationSeconds needs effect NoExecute), so the pod is
   * refused either way; tolerator after the in-tree plugin merges again, and the refusal names
   * another index. tolerator cannot tell a pod the in-tree plugin merged from one written so.
   */
  'second-merge-moves-an-invalid-toleration': (reference: Answer, got: Answer): boolean => {
    const want = refusalOf(reference);
    const have = refusalOf(got);
    if (want?.code !== 422 || have?.code !== 422) return false;
    if (!(want.message ?? '').includes("effect must be 'NoExecute' when `tolerationSeconds` is set")) return false;
    return withoutTolerationIndex(canonical(want)) === withoutTolerationIndex(canonical(have));
  },
} as const;

export type DeliberateDifference = keyof typeof DELIBERATE_DIFFERENCES;

/** JSON with sorted keys, so that two answers compare by value and print alike. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : inner,
  );
}

/**
 * How `got` compares with `reference`: `equal`, the name of the one of the `allowed` deliberate
 * differences that explains it, or `different`. Array order counts (tolerations are compared in
 * order).
 */
export function compareAnswers(
  reference: Answer,
  got: Answer,
  allowed: readonly DeliberateDifference[],
): 'equal' | DeliberateDifference | 'different' {
  if (canonical(reference) === canonical(got)) return 'equal';
  return allowed.find((name) => DELIBERATE_DIFFERENCES[name](reference, got)) ?? 'different';
}

/**
 * Two values as indented JSON in two columns, each line of the right marked `|` where it differs
 * from the left's line, for a shrunk failure: what each API server answered, side by side.
 */
export function sideBySide(leftTitle: string, left: unknown, rightTitle: string, right: unknown): string {
  const split = (value: unknown): string[] => (value === undefined ? 'undefined' : JSON.stringify(value, null, 2)).split('\n');
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
