/**
 * The plugins in the order Kubernetes applies the same rules, and their selection by
 * `--enable-plugins` / `--disable-plugins`. DaemonSetTolerations comes first: upstream the
 * DaemonSet controller writes these tolerations into the pod before the API server's admission
 * chain sees it, and running it after PodTolerationRestriction would let a second review merge
 * differently than the first (the webhook must be idempotent). Then the API server's own order
 * (pkg/kubeapiserver/options/plugins.go: DefaultTolerationSeconds before PodTolerationRestriction),
 * then tenancy, then validation of the final object, then warnings about where it can run.
 */
import type { PodTolerationRestrictionConfig } from './pod-toleration-restriction.js';
import { createPodTolerationRestriction } from './pod-toleration-restriction.js';
import { createDefaultTolerationSeconds, type DefaultTolerationSecondsConfig } from './default-toleration-seconds.js';
import { createDaemonSetTolerations } from './daemonset-tolerations.js';
import { createTolerationValidation } from './toleration-validation.js';
import { createSchedulingWarnings } from './scheduling-warnings.js';
import type { MutatingPlugin, PluginName, ValidatingPlugin } from './plugin.js';

/** Every plugin, in admission order. All are on by default. */
export const allPluginNames: readonly PluginName[] = [
  'DaemonSetTolerations',
  'DefaultTolerationSeconds',
  'PodTolerationRestriction',
  'DedicatedNodes',
  'TolerationValidation',
  'SchedulingWarnings',
];

export class PluginSelectionError extends Error {
  override readonly name = 'PluginSelectionError';
}

/**
 * kube-apiserver's rule for `--enable-admission-plugins` / `--disable-admission-plugins`: the
 * enabled set is the default set plus the enabled list minus the disabled list, a name in both
 * lists is an error, an unknown name is an error, and the order is always the fixed plugin order,
 * never the order of the flags.
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
  return allPluginNames.filter((name) => !disable.includes(name));
}

export interface PluginConfiguration {
  readonly enabled: readonly PluginName[];
  readonly defaultTolerationSeconds: DefaultTolerationSecondsConfig;
  readonly podTolerationRestriction: PodTolerationRestrictionConfig;
  /** Builds DedicatedNodes; absent when tenancy is not configured. */
  readonly dedicatedNodes?: MutatingPlugin & ValidatingPlugin;
}

export function buildPlugins(config: PluginConfiguration): { mutating: MutatingPlugin[]; validating: ValidatingPlugin[] } {
  const on = (name: PluginName): boolean => config.enabled.includes(name);
  const mutating: MutatingPlugin[] = [];
  const validating: ValidatingPlugin[] = [];
  if (on('DaemonSetTolerations')) {
    mutating.push(createDaemonSetTolerations());
  }
  if (on('DefaultTolerationSeconds')) {
    mutating.push(createDefaultTolerationSeconds(config.defaultTolerationSeconds));
  }
  if (on('PodTolerationRestriction')) {
    const plugin = createPodTolerationRestriction(config.podTolerationRestriction);
    mutating.push(plugin);
    validating.push(plugin);
  }
  if (on('DedicatedNodes') && config.dedicatedNodes !== undefined) {
    mutating.push(config.dedicatedNodes);
    validating.push(config.dedicatedNodes);
  }
  if (on('TolerationValidation')) {
    validating.push(createTolerationValidation());
  }
  // Last: a pod that is refused needs no warning about where it would have run.
  if (on('SchedulingWarnings')) {
    validating.push(createSchedulingWarnings());
  }
  return { mutating, validating };
}
