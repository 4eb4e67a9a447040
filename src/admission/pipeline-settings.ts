/**
 * The settings the admission pipeline is built from, and the pipeline built from them. The CLI
 * reads them from flags (src/cli/options.ts); `serve`, the review workers, the offline commands and
 * the tests all build their pipeline here, so every path decides with the same code.
 */
import type { KubernetesVersion } from '../api/feature-gate-history.js';
import type { ExplicitFeatureGates, FeatureGates } from '../api/feature-gates.js';
import { createDedicatedNodes } from '../plugins/dedicated-nodes.js';
import type { DeviceTaintRuleEnforcement } from '../plugins/device-taint-rule-safety.js';
import type { PodTolerationRestrictionConfig } from '../plugins/pod-toleration-restriction.js';
import type { PluginName } from '../plugins/plugin.js';
import { buildPlugins } from '../plugins/registry.js';
import type { PodNodeSelectorConfig } from '../scheduling/namespace-node-selector.js';
import type { PolicySet } from '../tenancy/policy-set.js';
import type { DeviceToleration } from '../tolerations/device-tolerations.js';
import type { ClusterFacts } from './cluster-facts.js';
import { createPipeline, type Pipeline } from './pipeline.js';

export interface AdmissionSettings {
  /** The gates as the flag and the built-in defaults set them: what the offline commands decide with. */
  readonly gates: FeatureGates;
  /** The gates `--feature-gates` names; `serve` with a cluster reads the others from it. */
  readonly explicitGates: ExplicitFeatureGates;
  readonly enabled: readonly PluginName[];
  readonly notReadySeconds: number;
  readonly unreachableSeconds: number;
  readonly podTolerationRestriction: PodTolerationRestrictionConfig;
  readonly podNodeSelector: PodNodeSelectorConfig;
  readonly deviceTaintRuleSafety: DeviceTaintRuleEnforcement;
  readonly defaultDeviceTolerations: readonly DeviceToleration[];
  readonly policiesDir: string | undefined;
  readonly clusterStateFile: string | undefined;
}

/**
 * The pipeline of a command. `gates` is the flag's value (`settings.gates`) unless given: `serve`
 * passes its gate source, read once per review.
 */
export function pipelineFor(
  settings: AdmissionSettings,
  clusterFacts: ClusterFacts,
  policies: () => PolicySet,
  gates: () => FeatureGates = () => settings.gates,
  serverVersion?: () => KubernetesVersion | undefined,
): Pipeline {
  const plugins = buildPlugins({
    enabled: settings.enabled,
    defaultTolerationSeconds: { notReadySeconds: settings.notReadySeconds, unreachableSeconds: settings.unreachableSeconds },
    podTolerationRestriction: settings.podTolerationRestriction,
    podNodeSelector: settings.podNodeSelector,
    deviceTaintRuleSafety: { enforcement: settings.deviceTaintRuleSafety },
    deviceTolerationRestriction: { defaults: settings.defaultDeviceTolerations },
    dedicatedNodes: createDedicatedNodes(policies),
  });
  return createPipeline({ ...plugins, gates, clusterFacts, ...(serverVersion === undefined ? {} : { serverVersion }) });
}
