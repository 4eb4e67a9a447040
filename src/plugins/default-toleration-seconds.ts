/**
 * DefaultTolerationSeconds, the kube-apiserver admission plugin (enabled by default upstream):
 * every pod that does not already tolerate the `not-ready` and `unreachable` NoExecute taints gets a
 * bounded toleration for each, so that a pod on a failed node is evicted after a grace period
 * instead of at once (no toleration) or never (an unbounded one).
 *
 * Upstream: plugin/pkg/admission/defaulttolerationseconds/admission.go (Admit), read at
 * aed80471ab6fbe2c2f884d1000108db3b65246b8 and 012b085ac870d359131f4251213bf2fff1d15aa0.
 */
import type { JsonObject, Pod, Toleration } from '../api/types.js';
import { TaintKey } from '../api/types.js';
import { tolerationsOf, withTolerations } from '../tolerations/pod-tolerations.js';
import type { AdmissionAttributes, MutatingPlugin, MutationOutcome, PluginContext } from './plugin.js';
import { isPodCreateOrUpdate } from './plugin.js';

export interface DefaultTolerationSecondsConfig {
  /** `--default-not-ready-toleration-seconds`; upstream's flag default is 300. */
  readonly notReadySeconds?: number;
  /** `--default-unreachable-toleration-seconds`; upstream's flag default is 300. */
  readonly unreachableSeconds?: number;
}

/**
 * 300 s = 5 minutes, upstream's default for both flags: long enough to ride out a kubelet restart
 * or a short network partition, short enough that a workload on a dead node is rescheduled within
 * minutes rather than never.
 */
export const defaultTolerationSeconds = 300;

/**
 * Whether some toleration already covers the `<key>:NoExecute` taint, so the plugin adds none for
 * it. Only key and effect are looked at: any operator, value or tolerationSeconds counts, and an
 * empty key or an empty effect is a wildcard. Upstream compares exactly, so the deprecated
 * `node.alpha.kubernetes.io/notReady` key does not count. `tolerator audit` asks the same question
 * of stored pods.
 */
export function coversNodeCondition(tolerations: readonly Toleration[], key: string): boolean {
  return tolerations.some(
    (toleration) => (toleration.key === key || !toleration.key) && (toleration.effect === 'NoExecute' || !toleration.effect),
  );
}

export function createDefaultTolerationSeconds(config: DefaultTolerationSecondsConfig = {}) {
  const notReadySeconds = config.notReadySeconds ?? defaultTolerationSeconds;
  const unreachableSeconds = config.unreachableSeconds ?? defaultTolerationSeconds;

  const handles = isPodCreateOrUpdate;

  return {
    name: 'DefaultTolerationSeconds',
    // Upstream: admission.NewHandler(admission.Create, admission.Update), pods proper only.
    handles,
    admit(object: JsonObject, attributes: AdmissionAttributes, _context: PluginContext): MutationOutcome {
      if (!handles(attributes)) {
        return { object };
      }
      const pod = object as Pod;
      const tolerations = tolerationsOf(pod);

      const toleratesNotReady = coversNodeCondition(tolerations, TaintKey.NodeNotReady);
      const toleratesUnreachable = coversNodeCondition(tolerations, TaintKey.NodeUnreachable);

      // Appended, not-ready first; existing entries are never modified (upstream appends directly).
      const added: Toleration[] = [];
      if (!toleratesNotReady) {
        // The node lifecycle controller taints a node not-ready:NoExecute when its Ready condition
        // is False; the pod survives that for notReadySeconds, then is evicted and rescheduled.
        added.push({ key: TaintKey.NodeNotReady, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: notReadySeconds });
      }
      if (!toleratesUnreachable) {
        // The same for unreachable:NoExecute, set when the node stops reporting (Ready Unknown).
        added.push({ key: TaintKey.NodeUnreachable, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: unreachableSeconds });
      }
      return { object: withTolerations(pod, tolerations.concat(added)) };
    },
  } satisfies MutatingPlugin;
}
