/**
 * The plugins in the order Kubernetes applies the same rules, and their selection by
 * `--enable-plugins` / `--disable-plugins`. DaemonSetTolerations comes first: upstream the
 * DaemonSet controller writes these tolerations into the pod before the API server's admission
 * chain sees it, and running it after PodTolerationRestriction would let a second review merge
 * differently than the first (the webhook must be idempotent). Then the API server's own order
 * (AllOrderedPlugins in pkg/kubeapiserver/options/plugins.go: PodNodeSelector, then
 * DefaultTolerationSeconds, then PodTolerationRestriction, then ExtendedResourceToleration), then tenancy, then validation of the
 * final object, then warnings about where it can run (which so see the merged nodeSelector).
 */
import type { PodTolerationRestrictionConfig } from './pod-toleration-restriction.js';
import { createPodTolerationRestriction } from './pod-toleration-restriction.js';
import { createDefaultTolerationSeconds, type DefaultTolerationSecondsConfig } from './default-toleration-seconds.js';
import { createDaemonSetTolerations } from './daemonset-tolerations.js';
import { createTolerationValidation } from './toleration-validation.js';
import { createSchedulingWarnings } from './scheduling-warnings.js';
import { createDeviceTolerationValidation } from './device-toleration-validation.js';
import { createDeviceTolerationRestriction, type DeviceTolerationRestrictionConfig } from './device-toleration-restriction.js';
import { createDeviceTaintRuleSafety, type DeviceTaintRuleSafetyConfig } from './device-taint-rule-safety.js';
import type { MutatingPlugin, ValidatingPlugin } from './plugin.js';
import { createPodNodeSelector } from './pod-node-selector.js';
import { createExtendedResourceToleration } from './extended-resource-toleration.js';
import { emptyPodNodeSelectorConfig, type PodNodeSelectorConfig } from '../scheduling/namespace-node-selector.js';

/** What the registry builds a plugin from: the settings of the flags and the configuration file. */
export interface PluginConfiguration {
  readonly enabled: readonly PluginName[];
  readonly defaultTolerationSeconds: DefaultTolerationSecondsConfig;
  readonly podTolerationRestriction: PodTolerationRestrictionConfig;
  /** PodNodeSelector's cluster default and whitelists; none when absent. */
  readonly podNodeSelector?: PodNodeSelectorConfig;
  /** DeviceTolerationRestriction's cluster defaults (`--default-device-tolerations`); none when absent. */
  readonly deviceTolerationRestriction?: DeviceTolerationRestrictionConfig;
  /** DeviceTaintRuleSafety's enforcement (`--device-taint-rule-safety`); Deny when absent. */
  readonly deviceTaintRuleSafety?: DeviceTaintRuleSafetyConfig;
  /** Builds DedicatedNodes; absent when tenancy is not configured. */
  readonly dedicatedNodes?: MutatingPlugin & ValidatingPlugin;
}

/** How one plugin is built: on the mutating side, the validating side or both; undefined when it has nothing to do. */
type PluginBuilder = (
  config: PluginConfiguration,
) => { readonly mutating?: MutatingPlugin; readonly validating?: ValidatingPlugin } | undefined;

/**
 * Every plugin, in admission order: the one list. A name here joins PluginName,
 * `--enable-plugins` and `--disable-plugins` at once, and `registry` below must then hold its entry (the
 * compiler holds the two together). All but those of `defaultOffPlugins` are on by default.
 */
export const allPluginNames = [
  'DaemonSetTolerations',
  'PodNodeSelector',
  'DefaultTolerationSeconds',
  'PodTolerationRestriction',
  'ExtendedResourceToleration',
  'DedicatedNodes',
  'TolerationValidation',
  // The DRA device plugins judge other resources (ResourceClaims, their templates, DeviceTaintRules)
  // than the pod plugins above, so their place among those changes nothing.
  'DeviceTolerationRestriction',
  'DeviceTolerationValidation',
  'DeviceTaintRuleSafety',
  // Last: a pod that is refused needs no warning about where it would have run.
  'SchedulingWarnings',
] as const;

export type PluginName = (typeof allPluginNames)[number];

/**
 * Off unless `--enable-plugins` names them, as kube-apiserver's DefaultOffAdmissionPlugins:
 * PodNodeSelector confines pods to nodes, which a cluster must ask for; ExtendedResourceToleration
 * lets a pod past a taint named like a resource merely by requesting that resource, which only a
 * cluster that so taints its device nodes wants.
 */
export const defaultOffPlugins: readonly PluginName[] = ['PodNodeSelector', 'ExtendedResourceToleration'];

/** A plugin's entry: how it is built, and the rule behind it in one sentence (`tolerator explain`). */
interface RegistryEntry {
  readonly build: PluginBuilder;
  readonly explains: string;
}

const registry: Readonly<Record<PluginName, RegistryEntry>> = {
  DaemonSetTolerations: {
    build: () => ({ mutating: createDaemonSetTolerations() }),
    explains:
      "a DaemonSet runs one pod on every node whatever its condition, so its pods tolerate the node-condition taints (the DaemonSet controller's set)",
  },
  PodNodeSelector: {
    build: (config) => {
      const plugin = createPodNodeSelector(config.podNodeSelector ?? emptyPodNodeSelectorConfig);
      return { mutating: plugin, validating: plugin };
    },
    explains:
      'the namespace (annotation scheduler.alpha.kubernetes.io/node-selector) or the cluster default confines its pods to the nodes with these labels (PodNodeSelector)',
  },
  DefaultTolerationSeconds: {
    build: (config) => ({ mutating: createDefaultTolerationSeconds(config.defaultTolerationSeconds) }),
    explains:
      'kube-apiserver gives every pod a bounded stay on a not-ready or unreachable node, so a short outage does not evict it at once and a long one does (DefaultTolerationSeconds)',
  },
  PodTolerationRestriction: {
    build: (config) => {
      const plugin = createPodTolerationRestriction(config.podTolerationRestriction);
      return { mutating: plugin, validating: plugin };
    },
    explains:
      'pods that request memory (QoS not BestEffort) keep scheduling onto nodes under memory pressure, and a namespace or the cluster may add default tolerations (PodTolerationRestriction)',
  },
  ExtendedResourceToleration: {
    build: () => ({ mutating: createExtendedResourceToleration() }),
    explains:
      'a pod that requests an extended resource (nvidia.com/gpu) tolerates the NoSchedule taint of that name, which keeps other pods off the nodes that have it (ExtendedResourceToleration)',
  },
  DedicatedNodes: {
    build: (config) =>
      config.dedicatedNodes === undefined ? undefined : { mutating: config.dedicatedNodes, validating: config.dedicatedNodes },
    explains: "the namespace belongs to a node group: its pods tolerate the group's taint and require the group's nodes (DedicatedNodes)",
  },
  TolerationValidation: {
    build: () => ({ validating: createTolerationValidation() }),
    explains: "every toleration must pass the API server's own validation (TolerationValidation)",
  },
  DeviceTolerationRestriction: {
    build: (config) => {
      const plugin = createDeviceTolerationRestriction(config.deviceTolerationRestriction);
      return { mutating: plugin, validating: plugin };
    },
    explains:
      "a new ResourceClaim or ResourceClaimTemplate gets the namespace's (or the cluster's) default NoExecute device tolerations, a bounded grace period, where it lacks them, and its device tolerations must be within the namespace's allow-list (DeviceTolerationRestriction)",
  },
  DeviceTolerationValidation: {
    build: () => ({ validating: createDeviceTolerationValidation() }),
    explains:
      "every device toleration of a ResourceClaim or ResourceClaimTemplate must pass the API server's own validation (DeviceTolerationValidation)",
  },
  DeviceTaintRuleSafety: {
    build: (config) => ({ validating: createDeviceTaintRuleSafety(config.deviceTaintRuleSafety) }),
    explains: 'a DeviceTaintRule that would taint every device by mistake, or evict without a dry run, is refused (DeviceTaintRuleSafety)',
  },
  SchedulingWarnings: {
    build: () => ({ validating: createSchedulingWarnings() }),
    explains: 'the pod is checked against the nodes the cluster state holds (SchedulingWarnings)',
  },
};

/** The rule behind a plugin in one sentence, as `tolerator explain` shows it. */
export function pluginExplanation(name: PluginName): string {
  return registry[name].explains;
}

export class PluginSelectionError extends Error {
  override readonly name = 'PluginSelectionError';
}

/**
 * kube-apiserver's rule for `--enable-admission-plugins` / `--disable-admission-plugins`: the
 * enabled set is the default set (every plugin but `defaultOffPlugins`) plus the enabled list minus
 * the disabled list, a name in both lists is an error, an unknown name is an error, and the order is
 * always the fixed plugin order, never the order of the flags.
 */
export function selectPlugins(enable: readonly string[], disable: readonly string[]): readonly PluginName[] {
  const known = new Set<string>(allPluginNames);
  for (const name of [...enable, ...disable]) {
    if (!known.has(name)) {
      throw new PluginSelectionError(`unknown admission plugin ${JSON.stringify(name)}; known plugins: ${allPluginNames.join(', ')}`);
    }
  }
  const both = enable.filter((name) => disable.includes(name));
  if (both.length > 0) {
    throw new PluginSelectionError(`${both.join(', ')} cannot be in both --enable-plugins and --disable-plugins`);
  }
  return allPluginNames.filter((name) => (enable.includes(name) || !defaultOffPlugins.includes(name)) && !disable.includes(name));
}

/**
 * The plugins that stand for the API server's own validation of the object (its registry
 * strategy's Validate, answered 422 Invalid), not for an admission plugin. kube-apiserver runs
 * that validation after every mutating admission (mutating webhooks included) and before every
 * validating one (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go, `Create`:
 * `rest.BeforeCreate`, then `createValidation`; `Update` alike with `rest.BeforeUpdate` and
 * `updateValidation`), so an object both invalid and refused by a validating admission plugin or
 * webhook is answered 422, and the validating webhook is never called. The validating side runs
 * them first, so that `review` and `explain`, which run both sides, answer as the API server
 * does; the validating webhook itself only ever sees objects that passed.
 */
export const apiServerValidationPlugins: readonly PluginName[] = ['TolerationValidation', 'DeviceTolerationValidation'];

export function buildPlugins(config: PluginConfiguration): { mutating: MutatingPlugin[]; validating: ValidatingPlugin[] } {
  const mutating: MutatingPlugin[] = [];
  const validation: ValidatingPlugin[] = [];
  const admission: ValidatingPlugin[] = [];
  for (const name of allPluginNames) {
    if (!config.enabled.includes(name)) continue;
    const built = registry[name].build(config);
    if (built?.mutating !== undefined) mutating.push(built.mutating);
    if (built?.validating !== undefined) (apiServerValidationPlugins.includes(name) ? validation : admission).push(built.validating);
  }
  return { mutating, validating: [...validation, ...admission] };
}
