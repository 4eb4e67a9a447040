/**
 * The API server's toleration validation (pkg/apis/core/validation/validation.go at the KEP-5471
 * merge, aceb89debc2632c5c9956c8b7ef591426a485447): `ValidateTolerations`,
 * `validateOnlyAddedTolerations`, `ValidateTolerationsInPodAnnotations`, and the ratchet of
 * pkg/api/pod/util.go `allowTaintTolerationComparisonOperators`. Every check runs and every failure
 * is reported, in upstream's order, with upstream's path, cause type, bad value and text
 * (docs/kubernetes-rules.md#toleration-validation).
 */
import type { FeatureGates } from '../api/feature-gates.js';
import type { Toleration } from '../api/types.js';
import { FieldErrorList, forbidden, invalid, notSupported, type FieldError } from '../validation/field-errors.js';
import { isQualifiedName, isValidLabelValue } from '../validation/name-validation.js';
import { unmarshalTolerations } from './go-json-tolerations.js';
import { matchingTolerationIn } from './matching.js';
import { isDecimalInteger, parseInt64 } from './numeric.js';

export interface TolerationValidationOptions {
  /** PodValidationOptions.AllowTaintTolerationComparisonOperators: the gate, or the ratchet. */
  readonly allowComparisonOperators: boolean;
}

/** The operators a disabled comparison gate still lists: upstream's validateTolerations names all four. */
const operatorsWithComparison = ['Equal', 'Exists', 'Lt', 'Gt'] as const;
/** The operators upstream lists for any other unknown operator (a lower-case `equal`), whatever the gate. */
const operatorsWithoutComparison = ['Equal', 'Exists'] as const;
/** validateTaintEffect's list; NoScheduleNoAdmit stays commented out upstream. */
const taintEffects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;

/**
 * ValidateTolerations. `fieldPath` is the list's path (`spec.tolerations`); each toleration is
 * checked at `<fieldPath>[i]`. Absent string fields are `""`, as after Go's decoding. Given a
 * FieldErrorList, the errors go into it (which keeps its first `limit`) and it is returned;
 * otherwise every error is returned. A path is built only for an error kept, so a valid list
 * costs no string per toleration.
 */
export function validateTolerations(
  tolerations: readonly Toleration[],
  fieldPath: string,
  options: TolerationValidationOptions,
): FieldError[];
export function validateTolerations(
  tolerations: readonly Toleration[],
  fieldPath: string,
  options: TolerationValidationOptions,
  errors: FieldErrorList,
): FieldErrorList;
export function validateTolerations(
  tolerations: readonly Toleration[],
  fieldPath: string,
  options: TolerationValidationOptions,
  into?: FieldErrorList,
): FieldErrorList | FieldError[] {
  const errors = into ?? new FieldErrorList(Infinity);
  for (let i = 0; i < tolerations.length; i++) {
    const toleration = tolerations[i] ?? {};
    const key = toleration.key ?? '';
    const operator = toleration.operator ?? '';
    const value = toleration.value ?? '';
    const effect = toleration.effect ?? '';
    const hasSeconds = toleration.tolerationSeconds !== undefined && toleration.tolerationSeconds !== null;

    // Row 1: a non-empty key must be a qualified name; one error per message (ValidateLabelName).
    if (key.length > 0) {
      for (const message of isQualifiedName(key)) {
        if (errors.keeps()) errors.add(invalid(pathAt(fieldPath, i, 'key'), key, message));
      }
    }
    // Row 2: only `Exists` may leave the key empty ("match all values and all keys").
    if (key.length === 0 && operator !== 'Exists') {
      if (errors.keeps())
        errors.add(
          invalid(
            pathAt(fieldPath, i, 'operator'),
            operator,
            'operator must be Exists when `key` is empty, which means "match all values and all keys"',
          ),
        );
    }
    // Row 3: tolerationSeconds only means something for NoExecute; an empty effect fails too.
    if (hasSeconds && effect !== 'NoExecute') {
      if (errors.keeps())
        errors.add(invalid(pathAt(fieldPath, i, 'effect'), effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"));
    }
    validateOperatorAndValue(operator, value, fieldPath, i, options, errors);
    // Row 5: an empty effect means "all effects"; any other value must be one of the three, exactly.
    if (effect.length > 0 && !(taintEffects as readonly string[]).includes(effect)) {
      if (errors.keeps()) errors.add(notSupported(pathAt(fieldPath, i, 'effect'), effect, taintEffects));
    }
  }
  return into ?? errors.errors;
}

/** `<fieldPath>[i].<field>`, built only for an error that is kept. */
function pathAt(fieldPath: string, i: number, field: string): string {
  return `${fieldPath}[${i}].${field}`;
}

/** Rows 4a–4f: the operator decides what the value must look like. */
function validateOperatorAndValue(
  operator: string,
  value: string,
  fieldPath: string,
  i: number,
  options: TolerationValidationOptions,
  errors: FieldErrorList,
): void {
  switch (operator) {
    case 'Equal':
    case '': {
      // 4a: upstream reports the value at `.operator`, all label-value messages joined with ";".
      // The empty value is a valid one: no list of messages is made for it.
      if (value === '') return;
      const messages = isValidLabelValue(value);
      if (messages.length > 0 && errors.keeps()) errors.add(invalid(pathAt(fieldPath, i, 'operator'), value, messages.join(';')));
      return;
    }
    case 'Exists':
      // 4b: also at `.operator`, with the value as the bad value.
      if (value.length > 0 && errors.keeps())
        errors.add(invalid(pathAt(fieldPath, i, 'operator'), value, "value must be empty when `operator` is 'Exists'"));
      return;
    case 'Lt':
    case 'Gt': {
      if (!options.allowComparisonOperators) {
        // 4c: the value is not looked at (upstream `break`s).
        if (errors.keeps()) errors.add(notSupported(pathAt(fieldPath, i, 'operator'), operator, operatorsWithComparison));
        return;
      }
      // 4d and 4e: both checks run, so one value can earn two errors.
      for (const message of isDecimalInteger(value)) {
        if (errors.keeps()) errors.add(invalid(pathAt(fieldPath, i, 'value'), value, message));
      }
      const parsed = parseInt64(value);
      if (parsed.error !== undefined) {
        const error = parsed.error;
        if (errors.keeps()) errors.add(invalid(pathAt(fieldPath, i, 'value'), value, error));
      }
      return;
    }
    default:
      // 4f: unknown operators (case matters: `exists`, `gt`) never list Lt/Gt.
      if (errors.keeps()) errors.add(notSupported(pathAt(fieldPath, i, 'operator'), operator, operatorsWithoutComparison));
  }
}

/**
 * validateOnlyAddedTolerations (pod UPDATE). Every old toleration must still be in the new list,
 * equal in key, operator, value and effect (upstream copies the candidate's tolerationSeconds onto
 * the old one before its DeepEqual, so only tolerationSeconds may change). The first one missing
 * gives a single Forbidden at the list's path and ends the check. Otherwise the new list is
 * validated again, so its errors appear a second time in the list; the rendered message
 * deduplicates them (ErrorList.ToAggregate).
 */
export function validateOnlyAddedTolerations(
  newTolerations: readonly Toleration[],
  oldTolerations: readonly Toleration[],
  fieldPath: string,
  options: TolerationValidationOptions,
): FieldError[];
export function validateOnlyAddedTolerations(
  newTolerations: readonly Toleration[],
  oldTolerations: readonly Toleration[],
  fieldPath: string,
  options: TolerationValidationOptions,
  errors: FieldErrorList,
): FieldErrorList;
export function validateOnlyAddedTolerations(
  newTolerations: readonly Toleration[],
  oldTolerations: readonly Toleration[],
  fieldPath: string,
  options: TolerationValidationOptions,
  into?: FieldErrorList,
): FieldErrorList | FieldError[] {
  const errors = into ?? new FieldErrorList(Infinity);
  // "Equal but for tolerationSeconds" is matchToleration; a set of the new list makes the check
  // linear (upstream searches the new list for each old toleration).
  const inNewList = matchingTolerationIn(newTolerations);
  if (!oldTolerations.every(inNewList)) {
    if (errors.keeps()) errors.add(forbidden(fieldPath, 'existing toleration can not be modified except its tolerationSeconds'));
  } else {
    validateTolerations(newTolerations, fieldPath, options, errors);
  }
  return into ?? errors.errors;
}

/**
 * allowTaintTolerationComparisonOperators: Gt/Lt are allowed when the gate is on, or when the old
 * object (UPDATE) already uses either in its spec tolerations, so an existing object stays
 * updatable after the gate is turned off. CREATE has no old object: only the gate counts.
 */
export function allowsComparisonOperators(
  gates: Pick<FeatureGates, 'TaintTolerationComparisonOperators'>,
  oldTolerations: readonly Toleration[] | undefined,
): boolean {
  return gates.TaintTolerationComparisonOperators || (oldTolerations ?? []).some((t) => t.operator === 'Lt' || t.operator === 'Gt');
}

/** core.TolerationsAnnotationKey: the alpha-era way to give a pod tolerations, still validated. */
const tolerationsAnnotationKey = 'scheduler.alpha.kubernetes.io/tolerations';

/**
 * ValidateTolerationsInPodAnnotations, run by ValidatePodSpecificAnnotations only when the
 * annotation is non-empty. `fieldPath` is the annotations' path (`metadata.annotations` for a
 * pod, `<template>.annotations` for a template). A value that Go's encoding/json cannot decode into
 * []core.Toleration (go-json-tolerations.ts) gives one Invalid at `fieldPath` whose bad value is
 * the annotation key and whose detail is Go's error text; otherwise the tolerations are validated
 * at `<fieldPath>.scheduler.alpha.kubernetes.io/tolerations[i]`.
 */
export function validateTolerationsInAnnotations(
  annotations: Readonly<Record<string, string>> | undefined,
  fieldPath: string,
  options: TolerationValidationOptions,
): FieldError[];
export function validateTolerationsInAnnotations(
  annotations: Readonly<Record<string, string>> | undefined,
  fieldPath: string,
  options: TolerationValidationOptions,
  errors: FieldErrorList,
): FieldErrorList;
export function validateTolerationsInAnnotations(
  annotations: Readonly<Record<string, string>> | undefined,
  fieldPath: string,
  options: TolerationValidationOptions,
  into?: FieldErrorList,
): FieldErrorList | FieldError[] {
  const errors = into ?? new FieldErrorList(Infinity);
  const raw: unknown = annotations?.[tolerationsAnnotationKey];
  if (typeof raw === 'string' && raw !== '') {
    const decoded = unmarshalTolerations(raw, 'core');
    if (decoded.error !== undefined) {
      const error = decoded.error;
      if (errors.keeps()) errors.add(invalid(fieldPath, tolerationsAnnotationKey, error));
    } else {
      validateTolerations(decoded.tolerations, `${fieldPath}.${tolerationsAnnotationKey}`, options, errors);
    }
  }
  return into ?? errors.errors;
}
