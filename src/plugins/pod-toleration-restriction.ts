/**
 * PodTolerationRestriction, the kube-apiserver admission plugin (off by default upstream), both
 * mutating and validating:
 * - on CREATE a pod gets its namespace's default tolerations (annotation
 *   `scheduler.alpha.kubernetes.io/defaultTolerations`), or the cluster default when the namespace
 *   sets none;
 * - on CREATE and UPDATE a pod whose QoS class is not BestEffort gets memory-pressure:NoSchedule;
 * - the resulting tolerations must all fall within the namespace whitelist (annotation
 *   `scheduler.alpha.kubernetes.io/tolerationsWhitelist`), or the cluster whitelist when the
 *   namespace sets none.
 *
 * Upstream: plugin/pkg/admission/podtolerationrestriction/admission.go. The kubernetes/kubernetes
 * copies read were old; the current logic was read from sanposhiho/kubernetes
 * 059ce4e8a1d958959595b970acaf846259348518 (docs/kubernetes-rules.md#podtolerationrestriction),
 * tests from the same fork.
 */
import type { JsonObject, Namespace, Pod, Toleration } from '../api/types.js';
import { TaintKey } from '../api/types.js';
import { unmarshalTolerations } from '../tolerations/go-json-tolerations.js';
import { mergeTolerations, verifyAgainstWhitelist } from '../tolerations/merge.js';
import { tolerationsOf, withTolerations } from '../tolerations/pod-tolerations.js';
import { isBestEffortPod } from '../tolerations/qos.js';
import type {
  AdmissionAttributes,
  Denial,
  MutatingPlugin,
  MutationOutcome,
  PluginContext,
  ValidatingPlugin,
  ValidationOutcome,
} from './plugin.js';
import { isPodCreateOrUpdate } from './plugin.js';

export const namespaceDefaultTolerationsAnnotation = 'scheduler.alpha.kubernetes.io/defaultTolerations';
export const namespaceTolerationsWhitelistAnnotation = 'scheduler.alpha.kubernetes.io/tolerationsWhitelist';

/** The plugin's `Configuration` (apis/podtolerationrestriction/v1 types.go): cluster-level lists. */
export interface PodTolerationRestrictionConfig {
  /** Cluster-level default tolerations, used when a namespace has no defaultTolerations annotation. */
  readonly default?: readonly Toleration[];
  /** Cluster-level whitelist, used when a namespace has no tolerationsWhitelist annotation. */
  readonly whitelist?: readonly Toleration[];
}

export type NamespaceTolerations =
  /** `undefined`: the annotation is unset, fall back to the cluster list. */
  | { readonly tolerations: Toleration[] | undefined; readonly error?: undefined }
  | { readonly tolerations?: undefined; readonly error: string };

/**
 * extractNSTolerations: unset (no annotations, or the key absent) is different from empty. Unset
 * returns `undefined` and the cluster list applies; a value of `""`, `"[]"` or `"null"` returns
 * `[]`, which overrides the cluster list with nothing. A value that is not a JSON array of
 * tolerations is an error with Go's encoding/json text (syntax or type error); upstream returns
 * that error bare, and we prefix it with the namespace and annotation so the reader knows where
 * to look.
 *
 * An unknown namespace (`undefined`) reads as unset: the cluster-state source answers `undefined`
 * only for a namespace that does not exist, and the API server's NamespaceLifecycle plugin rejects
 * pods there anyway.
 */
export function extractNamespaceTolerations(namespace: Namespace | undefined, annotation: string): NamespaceTolerations {
  const annotations = namespace?.metadata.annotations ?? {};
  if (!Object.hasOwn(annotations, annotation)) {
    return { tolerations: undefined };
  }
  const text = annotations[annotation] ?? '';
  if (text.length === 0) {
    return { tolerations: [] };
  }
  const decoded = unmarshalTolerations(text, 'v1');
  if (decoded.error !== undefined) {
    const where = `namespace ${JSON.stringify(namespace?.metadata.name ?? '')} annotation ${JSON.stringify(annotation)}`;
    return { error: `${where}: ${decoded.error}` };
  }
  // A JSON null comes back as [] (Go's nil slice, which extractNSTolerations copies into an empty,
  // non-nil one): an override with nothing, like "".
  return { tolerations: decoded.tolerations };
}

/**
 * The memory-pressure toleration for pods that are not BestEffort. The kubelet evicts BestEffort
 * pods first under memory pressure, and the node's memory-pressure:NoSchedule taint keeps new
 * BestEffort pods off the node; a pod with memory requests is admitted there and survives, so
 * it tolerates the taint.
 */
export function memoryPressureToleration(): Toleration {
  return { key: TaintKey.NodeMemoryPressure, operator: 'Exists', effect: 'NoSchedule' };
}

/**
 * The denial for a namespace default toleration the merge keeps whose tolerationSeconds is an
 * integer beyond 2^53 − 1, or undefined. Upstream stores such a value exactly (an int64); here it
 * has already been rounded to a double, and adding it would store another number (2^53 + 1 becomes
 * 2^53) or one beyond int64 (2^63 − 1 becomes 2^63, which the API server then fails to decode,
 * answering 500 InternalError). Refused instead, naming the entry: found by the differential
 * suite (test/differential/), held by test/plugins/pod-toleration-restriction.test.ts. A default
 * the pod already carries (the in-tree plugin ran first) is not added, and not refused. The
 * cluster default cannot hold one: parseAdmissionConfig refuses it at start.
 */
function inexactDefault(
  merged: readonly Toleration[],
  defaults: readonly Toleration[],
  namespace: Namespace | undefined,
): Denial | undefined {
  const kept = new Set(merged);
  const index = defaults.findIndex(
    (toleration) =>
      kept.has(toleration) && typeof toleration.tolerationSeconds === 'number' && !Number.isSafeInteger(toleration.tolerationSeconds),
  );
  if (index < 0) {
    return undefined;
  }
  const where = `namespace ${JSON.stringify(namespace?.metadata.name ?? '')} annotation ${JSON.stringify(namespaceDefaultTolerationsAnnotation)}`;
  return {
    reason: 'Forbidden',
    message: `${where}: toleration ${index}: tolerationSeconds beyond ${Number.MAX_SAFE_INTEGER} (2^53 - 1) cannot be added exactly`,
  };
}

export function createPodTolerationRestriction(config: PodTolerationRestrictionConfig = {}) {
  const handles = isPodCreateOrUpdate;

  /**
   * Validate: the pod's tolerations must each be covered by a whitelist entry. Upstream returns
   * this as a plain `fmt.Errorf`, not admission.NewForbidden (so are the annotation errors), and
   * kube-apiserver turns an error that is not an APIStatus into a 500 with reason Unknown, which
   * is the empty string, so the Status has no reason (responsewriters.ErrorToAPIStatus, default
   * case; test/e2e/admission-plugins.e2e.ts sees it so from the in-tree plugin). A webhook answering 500 would trip its
   * failurePolicy instead of refusing, so the refusal is sent as what it means, 403 Forbidden,
   * with upstream's text.
   */
  function whitelistDenial(tolerations: readonly Toleration[], namespace: Namespace | undefined): Denial | undefined {
    if (tolerations.length === 0) {
      return undefined;
    }
    const fromNamespace = extractNamespaceTolerations(namespace, namespaceTolerationsWhitelistAnnotation);
    if (fromNamespace.error !== undefined) {
      return { reason: 'Forbidden', message: fromNamespace.error };
    }
    let whitelist: readonly Toleration[] = fromNamespace.tolerations ?? [];
    let scope = 'namespace';
    if (fromNamespace.tolerations === undefined) {
      whitelist = config.whitelist ?? [];
      scope = 'cluster';
    }
    if (whitelist.length > 0 && !verifyAgainstWhitelist(tolerations, whitelist)) {
      return {
        reason: 'Forbidden',
        message: `pod tolerations (possibly merged with namespace default tolerations) conflict with its ${scope} whitelist`,
      };
    }
    return undefined;
  }

  return {
    name: 'PodTolerationRestriction',
    handles,

    admit(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): MutationOutcome {
      if (!handles(attributes)) {
        return { object };
      }
      const pod = object as Pod;
      const original = tolerationsOf(pod);

      const extra: Toleration[] = [];
      let defaults: readonly Toleration[] = [];
      if (attributes.operation === 'CREATE') {
        const fromNamespace = extractNamespaceTolerations(context.namespace, namespaceDefaultTolerationsAnnotation);
        if (fromNamespace.error !== undefined) {
          return { denial: { reason: 'Forbidden', message: fromNamespace.error } };
        }
        // Copies: the pod must not share objects with the configuration.
        defaults = (fromNamespace.tolerations ?? config.default ?? []).map((t) => ({ ...t }));
        extra.push(...defaults);
      }
      if (!isBestEffortPod(pod, context.gates)) {
        extra.push(memoryPressureToleration());
      }

      let tolerations: readonly Toleration[] = original;
      if (extra.length > 0) {
        // Pod first: on equal standing the pod's own entry survives (MergeTolerations).
        // mergeTolerations returns the given objects themselves, so what it kept from the pod is
        // recognised by identity (an extra equal to a pod entry never survives: the first wins).
        const merged = mergeTolerations(original, extra);
        if (attributes.operation === 'CREATE') {
          tolerations = merged;
        } else {
          // On UPDATE only what the merge adds is appended. MergeTolerations also drops a pod
          // toleration that another one covers (even two of the pod's own), and the API server
          // forbids an UPDATE that removes or rewrites a toleration ("existing toleration can not be
          // modified except its tolerationSeconds"): upstream would make such a pod un-updatable
          // once it is not BestEffort. Keeping every existing entry keeps the pod updatable.
          const originals = new Set(original);
          const added = merged.filter((t) => !originals.has(t));
          tolerations = original.concat(added);
        }
      }

      // Upstream's Admit ends with Validate: the merged list must be within the whitelist. That
      // refusal comes first, as upstream's does; a default beyond 2^53 only where upstream stores.
      const denial = whitelistDenial(tolerations, context.namespace) ?? inexactDefault(tolerations, defaults, context.namespace);
      if (denial !== undefined) {
        return { denial };
      }
      return { object: withTolerations(pod, tolerations) };
    },

    validate(object: JsonObject, attributes: AdmissionAttributes, context: PluginContext): ValidationOutcome {
      if (!handles(attributes)) {
        return {};
      }
      const denial = whitelistDenial(tolerationsOf(object), context.namespace);
      return denial === undefined ? {} : { denial };
    },
  } satisfies MutatingPlugin & ValidatingPlugin;
}
