/**
 * TolerationValidation: the API server's own toleration rules, applied by the webhook so that a
 * bad toleration is refused with the API server's words, and so that a bad pod template is refused
 * when the workload is applied rather than later, when its controller fails to create pods.
 *
 * Pods (pkg/apis/core/validation ValidatePodCreate / ValidatePodUpdate):
 *   CREATE  annotation tolerations, then spec.tolerations
 *   UPDATE  the same two, then the annotation again (ValidatePodSpecificAnnotationUpdates), then
 *           validateOnlyAddedTolerations (a Forbidden, or spec.tolerations a second time)
 * Pod templates (ValidatePodTemplateSpec): annotation tolerations at `<template>.annotations`, then
 * `<template>.spec.tolerations`; templates may change freely, so no only-added rule.
 * Gt/Lt follow the gate, ratcheted on the OLD object's (or old template's) spec tolerations.
 */
import { templatePathOf, valueAt } from '../api/pod-template.js';
import { resourceKindByResource } from '../api/resource-kinds.js';
import type { Toleration } from '../api/types.js';
import { compareVersions, type KubernetesVersion } from '../api/feature-gate-history.js';
import { distinctErrors, FieldErrorList } from '../validation/field-errors.js';
import type { AdmissionAttributes, PluginContext, ValidatingPlugin, ValidationOutcome } from './plugin.js';
import {
  allowsComparisonOperators,
  validateOnlyAddedTolerations,
  validateTolerations,
  validateTolerationsInAnnotations,
  type TolerationValidationOptions,
} from '../tolerations/validate-tolerations.js';

/** Where a resource keeps what is validated, and the kind its denial names. */
interface Target {
  readonly group: string;
  readonly kind: string;
  /** Path segments of the pod template; empty for a pod, whose metadata and spec are top-level. */
  readonly template: readonly string[];
}

function targetOf(attributes: AdmissionAttributes): Target | undefined {
  const kind = resourceKindByResource(attributes.resource.group, attributes.resource.resource);
  return kind === undefined ? undefined : { group: kind.group, kind: kind.kind, template: templatePathOf(kind) };
}

/**
 * From 1.37 an error whose text repeats an earlier one is reported once. Every resource this
 * plugin validates has a declarative-validation strategy there (its pkg/registry/.../strategy.go
 * embeds rest.DeclarativeValidation), so kube-apiserver passes the handwritten errors through
 * ValidateDeclarativelyWithMigrationChecks, whose FilterCoveredHandwrittenErrors goes through
 * ErrorList.Filter and so ToAggregate, which keeps the first of errors that print alike
 * (k8s.io/apiserver pkg/registry/rest/validate.go and apimachinery field/errors.go at v0.37.2).
 * Through 1.36 pods did not take that path (1.36's returns before filtering when nothing is
 * enforced declaratively), and the second ValidateTolerations of a pod UPDATE repeats each error in
 * the causes (seen on v1.36.3 and v1.37.2: the message, an aggregate, has each once either way).
 */
export const firstVersionWithoutRepeatedErrors: KubernetesVersion = { major: 1, minor: 37 };

export function repeatsErrors(serverVersion: KubernetesVersion | undefined): boolean {
  return serverVersion === undefined || compareVersions(serverVersion, firstVersionWithoutRepeatedErrors) < 0;
}

export function createTolerationValidation() {
  return {
    name: 'TolerationValidation',

    handles(attributes: AdmissionAttributes): boolean {
      // Subresources (status, binding, ephemeralcontainers, scale) never carry a changed toleration list.
      return (
        (attributes.operation === 'CREATE' || attributes.operation === 'UPDATE') &&
        attributes.subResource === '' &&
        targetOf(attributes) !== undefined
      );
    },

    validate(object, attributes, context): ValidationOutcome {
      const target = targetOf(attributes);
      if (target === undefined) {
        return {};
      }
      // Bounded (maxFieldErrors kept, the rest counted): a 3 MiB pod can hold a million errors.
      const errors = new FieldErrorList();
      if (target.template.length === 0) {
        validatePod(object, attributes, context, errors);
      } else {
        validateTemplate(object, attributes, context, target.template, errors);
      }
      if (errors.empty) {
        return {};
      }
      return {
        denial: {
          reason: 'Invalid',
          group: target.group,
          kind: target.kind,
          name: nameOf(object, attributes),
          // Only the kept errors are compared: past maxFieldErrors the rest are counted, never built.
          errors: repeatsErrors(context.serverVersion) ? errors.errors : distinctErrors(errors.errors),
          ...(errors.omitted > 0 ? { omittedErrors: errors.omitted } : {}),
        },
      };
    },
  } satisfies ValidatingPlugin;
}

function validatePod(object: unknown, attributes: AdmissionAttributes, context: PluginContext, errors: FieldErrorList): void {
  const tolerations = tolerationsAt(object, ['spec']);
  const annotations = annotationsAt(object, ['metadata']);
  const isUpdate = attributes.operation === 'UPDATE';
  const oldTolerations = isUpdate ? tolerationsAt(attributes.oldObject, ['spec']) : undefined;
  const options: TolerationValidationOptions = { allowComparisonOperators: allowsComparisonOperators(context.gates, oldTolerations) };

  validateTolerationsInAnnotations(annotations, 'metadata.annotations', options, errors);
  validateTolerations(tolerations, 'spec.tolerations', options, errors);
  if (isUpdate) {
    validateTolerationsInAnnotations(annotations, 'metadata.annotations', options, errors);
    validateOnlyAddedTolerations(tolerations, oldTolerations ?? [], 'spec.tolerations', options, errors);
  }
}

function validateTemplate(
  object: unknown,
  attributes: AdmissionAttributes,
  context: PluginContext,
  template: readonly string[],
  errors: FieldErrorList,
): void {
  const oldTolerations = attributes.operation === 'UPDATE' ? tolerationsAt(attributes.oldObject, [...template, 'spec']) : undefined;
  const options: TolerationValidationOptions = { allowComparisonOperators: allowsComparisonOperators(context.gates, oldTolerations) };
  const path = template.join('.');
  // ValidatePodTemplateSpec passes `<template>.annotations`, not `<template>.metadata.annotations`.
  validateTolerationsInAnnotations(annotationsAt(object, [...template, 'metadata']), `${path}.annotations`, options, errors);
  validateTolerations(tolerationsAt(object, [...template, 'spec']), `${path}.spec.tolerations`, options, errors);
}

/** `<path>.tolerations`; absent or null is the empty list, as a nil slice upstream. */
function tolerationsAt(root: unknown, specPath: readonly string[]): readonly Toleration[] {
  const value = valueAt(root, [...specPath, 'tolerations']);
  return Array.isArray(value) ? (value as Toleration[]) : [];
}

function annotationsAt(root: unknown, metadataPath: readonly string[]): Readonly<Record<string, string>> | undefined {
  const value = valueAt(root, [...metadataPath, 'annotations']);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, string>) : undefined;
}

/** The object's own name: a generated name is already in place when validation runs. */
function nameOf(object: unknown, attributes: AdmissionAttributes): string {
  const name = valueAt(object, ['metadata', 'name']);
  return typeof name === 'string' && name !== '' ? name : attributes.name;
}
