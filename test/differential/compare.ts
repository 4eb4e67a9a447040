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
/** The same before the validating webhook's. */
export const deniedByValidate = 'admission webhook "validate.tolerator.dev" denied the request: ';

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
    // The mutating webhook's refusal, or the validating webhook's: a toleration that a mutating
    // plugin adds after PodTolerationRestriction's own check (ExtendedResourceToleration's) meets
    // the whitelist in the validating phase, in-tree and in tolerator alike.
    const prefix = [deniedByMutate, deniedByValidate].find((text) => have.message?.startsWith(text) === true);
    if (prefix === undefined) return false;
    const text = have.message.slice(prefix.length);
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
  /**
   * In-tree plugins and tolerator together: a toleration the in-tree ExtendedResourceToleration
   * added (after the in-tree PodTolerationRestriction's own check) outside the namespace's
   * whitelist reaches tolerator's mutating webhook, whose PodTolerationRestriction refuses it there
   * (403). In-tree it is refused only in the validating phase, which comes after the API server's
   * validation of the object: a pod invalid as well is answered 422 in-tree. tolerator cannot tell
   * a toleration the in-tree plugin added from one the pod was written with, which upstream
   * refuses before validation too.
   */
  'whitelist-refused-before-validation': (reference: Answer, got: Answer): boolean => {
    const want = refusalOf(reference);
    const have = refusalOf(got);
    if (want?.code !== 422 || have?.code !== 403 || have.reason !== 'Forbidden' || have.details !== undefined) return false;
    return /^pod tolerations \(possibly merged with namespace default tolerations\) conflict with its (namespace|cluster) whitelist$/.test(
      (have.message ?? '').replace(deniedByMutate, ''),
    );
  },
  /**
   * In-tree plugins and tolerator together: tolerator's PodTolerationRestriction merges on CREATE
   * (MergeTolerations, which drops a toleration another covers) after the in-tree
   * ExtendedResourceToleration has added its tolerations, so a pod toleration that an added one
   * covers (`{key: example.com/gpu, effect: NoSchedule}` under `{key: example.com/gpu, operator:
   * Exists, effect: NoSchedule}`) is dropped, where in-tree the merge ran before it. The pod
   * tolerates the same taints. tolerator cannot tell the in-tree plugin's toleration from the pod's.
   * The merge may drop an added toleration too (`{key: example.com/gpu, operator: Exists}` of the
   * pod, no effect, covers it), which tolerator's ExtendedResourceToleration then appends again,
   * at the end. A pod refused by validation for one of its tolerations is refused either way, the
   * error naming another index (the entries before it one fewer).
   */
  'second-merge-drops-a-covered-toleration': (reference: Answer, got: Answer): boolean => {
    if ('stored' in reference && 'stored' in got) return dropsCoveredThenAppendsAgain(tolerationsIn(reference), tolerationsIn(got));
    const want = refusalOf(reference);
    const have = refusalOf(got);
    if (want?.code !== 422 || have?.code !== 422) return false;
    return withoutTolerationIndex(canonical(want)) === withoutTolerationIndex(canonical(have));
  },
  /**
   * On UPDATE tolerator only appends (docs/kubernetes-rules.md, "UPDATE only appends
   * tolerations"): upstream's PodTolerationRestriction merges on UPDATE too and drops a pod
   * toleration another covers, so the stored pod lacks a duplicate tolerator keeps; or an
   * ExtendedResourceToleration toleration that an `Exists` without effect covers is dropped and
   * appended again by the plugin after it, where tolerator keeps it in place (the same tolerations
   * in another order); or the API server refuses the update ("existing toleration can not be
   * modified") that tolerator lets through; or both refuse an invalid toleration, naming another
   * index. Only for the answers to an UPDATE.
   */
  'update-appends-only': (reference: Answer, got: Answer): boolean => {
    if (!('stored' in got)) {
      const want = refusalOf(reference);
      const have = refusalOf(got);
      if (have?.code !== 422) return false;
      // The appended toleration is invalid and upstream's merge dropped it (an `Exists` of the pod
      // covers it): stored in-tree, or refused only for the entries the merge dropped. Each
      // toleration stored at the create was valid, so an invalid one is the appended one.
      // Stored in-tree: the merge dropped it, so it sits past every entry upstream kept (tolerator
      // keeps them all, in place, and appends after them).
      const pastStored = 'stored' in reference ? tolerationsIn(reference).length : 0;
      if (onlyTolerationErrors(have, pastStored) && (want === undefined || canonical(want) === canonical(existingModifiedOnly)))
        return true;
      // Refused either way for one of its tolerations, the error naming another index (upstream
      // dropped some before it); upstream's answer may list `existing toleration can not be
      // modified` too, for the entries its merge dropped, and then the others once.
      if (want?.code !== 422) return false;
      const same = (refusal: Refusal): boolean => withoutTolerationIndex(canonical(refusal)) === withoutTolerationIndex(canonical(have));
      const nothingDropped = withNothingDropped(want);
      return same(want) || (nothingDropped !== undefined && same(nothingDropped));
    }
    if ('stored' in reference) {
      const [have, want] = [tolerationsIn(got), tolerationsIn(reference)];
      return dropsOnlyCovered(have, want) || sameInAnotherOrder(have, want);
    }
    return canonical(reference.refused) === canonical(existingModifiedOnly);
  },
} as const;

export type DeliberateDifference = keyof typeof DELIBERATE_DIFFERENCES;

interface PlainToleration {
  readonly key?: string;
  readonly operator?: string;
  readonly value?: string;
  readonly effect?: string;
  readonly tolerationSeconds?: number;
}

function tolerationsIn(answer: Answer): readonly PlainToleration[] {
  return 'stored' in answer && Array.isArray(answer.stored.tolerations) ? (answer.stored.tolerations as PlainToleration[]) : [];
}

/** The API server's field error for an UPDATE that removed or rewrote a toleration (validateOnlyAddedTolerations). */
const existingTolerationModified = {
  field: 'spec.tolerations',
  message: 'Forbidden: existing toleration can not be modified except its tolerationSeconds',
} as const;

/** The API server's whole answer to an UPDATE of pod "pod" that removed or rewrote a toleration and did nothing else wrong. */
const existingModifiedOnly: Refusal = {
  code: 422,
  reason: 'Invalid',
  message: `Pod "pod" is invalid: ${existingTolerationModified.field}: ${existingTolerationModified.message}`,
  details: { name: 'pod', kind: 'Pod', causes: [{ reason: 'FieldValueForbidden', ...existingTolerationModified }] },
};

/** A 422 whose every field error names one toleration (`spec.tolerations[N]…`) at an index N ≥ `from`. */
function onlyTolerationErrors(refused: Refusal, from: number): boolean {
  const causes = (refused.details as { causes?: { field?: string }[] } | undefined)?.causes;
  return (
    refused.code === 422 &&
    Array.isArray(causes) &&
    causes.length > 0 &&
    causes.every((cause) => {
      const index = /^spec\.tolerations\[(\d+)\]/.exec(cause.field ?? '')?.[1];
      return index !== undefined && Number(index) >= from;
    })
  );
}

/**
 * The 422 the API server gives an UPDATE that keeps every toleration, from its answer to the same
 * update with some dropped (`existing toleration can not be modified` beside other errors), or
 * undefined when the refusal is not of that shape. pkg/apis/core/validation's ValidatePodUpdate
 * validates the tolerations in ValidatePodSpec and again in validateOnlyAddedTolerations, which
 * returns at the Forbidden error before it: without that error each `spec.tolerations` cause is
 * listed twice (the message, built from the list, names each text once).
 */
function withNothingDropped(refused: Refusal): Refusal | undefined {
  const details = refused.details as { causes?: { field?: string; message?: string }[] } | undefined;
  if (details === undefined || !Array.isArray(details.causes) || refused.message === undefined) return undefined;
  const isModified = (c: { field?: string; message?: string }): boolean =>
    c.field === existingTolerationModified.field && c.message === existingTolerationModified.message;
  const kept = details.causes.filter((c) => !isModified(c));
  if (kept.length === details.causes.length || kept.length === 0) return undefined;
  const match = /^(.*? is invalid: )\[(.*)\]$/s.exec(refused.message);
  if (match === null) return undefined;
  const text = `${existingTolerationModified.field}: ${existingTolerationModified.message}`;
  const rest = match[2]!.split(', ').filter((entry) => entry !== text);
  const message = `${match[1]!}${rest.length === 1 ? rest[0]! : `[${rest.join(', ')}]`}`;
  const again = kept.filter((c) => c.field === 'spec.tolerations' || c.field?.startsWith('spec.tolerations[') === true);
  const causes = [...kept, ...again].sort((a, b) => canonical(a).localeCompare(canonical(b)));
  return { ...refused, message, details: { ...details, causes } };
}

/** The same tolerations, as many times each, in another order. */
function sameInAnotherOrder(a: readonly PlainToleration[], b: readonly PlainToleration[]): boolean {
  const sorted = (list: readonly PlainToleration[]): string[] => list.map((t) => canonical(t)).sort();
  return a.length === b.length && canonical(sorted(a)) === canonical(sorted(b));
}

/**
 * Whether toleration `by` tolerates every taint `t` does, as upstream's MergeTolerations decides
 * it (pkg/util/tolerations isSuperset, v1.35.8): the same key, or none with `Exists`; the same
 * effect, or none; a NoExecute bound no longer than `t`'s; for `Equal` (or no operator) a `t`
 * that spells `Equal` out, with the same value; `Gt`/`Lt` cover only their copy. Written here apart from the code under test.
 */
function covers(by: PlainToleration, t: PlainToleration): boolean {
  if (canonical(by) === canonical(t)) return true;
  const [byKey, tKey] = [by.key ?? '', t.key ?? ''];
  if (byKey !== tKey && (byKey !== '' || by.operator !== 'Exists')) return false;
  const byEffect = by.effect ?? '';
  if (byEffect !== (t.effect ?? '') && byEffect !== '') return false;
  if (byEffect === 'NoExecute' && by.tolerationSeconds !== undefined) {
    if (t.tolerationSeconds === undefined || t.tolerationSeconds > by.tolerationSeconds) return false;
  }
  switch (by.operator ?? '') {
    case 'Equal':
    case '':
      // Upstream asks `t` for the operator spelled out: an `Equal` omitted is not covered.
      return t.operator === 'Equal' && (by.value ?? '') === (t.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/**
 * Whether `fewer` is `more` with some entries left out, each of them an exact copy of an entry of
 * `fewer` or covered by an entry of `coverers` (`fewer` unless said): the drops of upstream's
 * MergeTolerations.
 */
function dropsOnlyCovered(
  more: readonly PlainToleration[],
  fewer: readonly PlainToleration[],
  coverers: readonly PlainToleration[] = fewer,
): boolean {
  if (fewer.length >= more.length) return false;
  let next = 0;
  for (const t of more) {
    if (next < fewer.length && canonical(fewer[next]) === canonical(t)) next++;
    else if (!coverers.some((by) => covers(by, t))) return false;
  }
  return next === fewer.length;
}

/**
 * Whether `got` is `reference` with covered entries dropped (dropsOnlyCovered) and then some
 * ExtendedResourceToleration entries (`{key, operator: Exists, effect: NoSchedule}`) of
 * `reference` moved to the end: dropped by a merge and appended again.
 */
function dropsCoveredThenAppendsAgain(reference: readonly PlainToleration[], got: readonly PlainToleration[]): boolean {
  const isAdded = (t: PlainToleration): boolean =>
    t.key !== undefined &&
    t.operator === 'Exists' &&
    t.effect === 'NoSchedule' &&
    t.value === undefined &&
    t.tolerationSeconds === undefined;
  for (let tail = 0; tail <= got.length && (tail === 0 || isAdded(got[got.length - tail]!)); tail++) {
    const head = got.slice(0, got.length - tail);
    const rest = [...reference];
    const moved = got.slice(got.length - tail).every((t) => {
      const at = rest.findIndex((r) => canonical(r) === canonical(t));
      if (at < 0) return false;
      rest.splice(at, 1);
      return true;
    });
    if (!moved) continue;
    if (tail > 0 && canonical(rest) === canonical(head)) return true;
    if (dropsOnlyCovered(rest, head, got)) return true;
  }
  return false;
}

/**
 * The answer with a 422's field errors in a fixed order. kube-apiserver validates a resource map
 * (`resources.requests`, `limits`) by ranging over a Go map, whose order is random: the same pod
 * sent twice to one API server lists its errors in two orders, in `details.causes` and in the
 * message (`Pod "p" is invalid: [<field>: <message>, …]`, built from the same list, repeated texts
 * once). The causes are sorted, and the message rebuilt in that order when it is the one the
 * causes make; any other answer is returned as it is.
 */
export function withFieldErrorsSorted(answer: Answer): Answer {
  const refused = refusalOf(answer);
  if (refused?.code !== 422 || typeof refused.details !== 'object' || refused.details === null) return answer;
  const details = refused.details as { causes?: { field?: string; message?: string }[] };
  if (!Array.isArray(details.causes) || refused.message === undefined) return answer;
  const texts = (causes: readonly { field?: string; message?: string }[]): string[] => [
    ...new Set(causes.map((cause) => `${cause.field ?? ''}: ${cause.message ?? ''}`)),
  ];
  const listed = texts(details.causes);
  const match = /^(.*? is invalid: )(?:\[(.*)\]|(.*))$/s.exec(refused.message);
  const inner = match?.[2] ?? match?.[3];
  if (match === null || inner !== listed.join(', ')) return answer;
  const causes = [...details.causes].sort((a, b) => canonical(a).localeCompare(canonical(b)));
  const sorted = texts(causes);
  const message = `${match[1]!}${sorted.length === 1 ? sorted[0]! : `[${sorted.join(', ')}]`}`;
  return { refused: { ...refused, message, details: { ...details, causes } } };
}

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

/** Runs `work` on every item with at most `limit` at once, results in the items' order. */
export async function pooled<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
