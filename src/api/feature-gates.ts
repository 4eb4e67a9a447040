/**
 * The feature gates tolerator reads, with Kubernetes v1.35 defaults. Gates are values passed into
 * the pure code, never read from a global (upstream passes `enableComparisonOperators` into
 * `ToleratesTaint` the same way).
 */
export interface FeatureGates {
  /** KEP-5471, alpha in 1.35, default off: the `Gt` and `Lt` toleration operators. */
  readonly TaintTolerationComparisonOperators: boolean;
  /** Beta and on by default since 1.34: pod-level `spec.resources` decides the QoS class. */
  readonly PodLevelResources: boolean;
  /**
   * KEP-2837, beta and on by default in 1.37 (absent before): a pod-level `resources` that sets no
   * cpu, memory or hugepages (`resources: {}`) no longer decides the QoS class alone; the
   * containers do, as if it were absent (pkg/apis/core/helper/qos/qos.go at v1.37.2).
   */
  readonly PodLevelResourcesFixKubeletQOSClass: boolean;
  /**
   * KEP-5055: taints on DRA devices and tolerations in ResourceClaims (alpha and off in 1.33–1.35,
   * beta and on in 1.36, GA in 1.37). Off, the API server drops every device toleration of a new
   * claim or template before validating it (resourceclaimspec.DropDisabledFields), so the device
   * plugins have nothing to judge and nothing they add would be kept.
   */
  readonly DRADeviceTaints: boolean;
  /** KEP-5055: the DeviceTaintRule API (alpha and off in 1.35, beta and still off in 1.36, GA in 1.37). */
  readonly DRADeviceTaintRules: boolean;
}

export const defaultFeatureGates: FeatureGates = {
  TaintTolerationComparisonOperators: false,
  PodLevelResources: true,
  PodLevelResourcesFixKubeletQOSClass: false,
  DRADeviceTaints: false,
  DRADeviceTaintRules: false,
};

export type FeatureGateName = keyof FeatureGates;

export const featureGateNames: readonly FeatureGateName[] = [
  'TaintTolerationComparisonOperators',
  'PodLevelResources',
  'PodLevelResourcesFixKubeletQOSClass',
  'DRADeviceTaints',
  'DRADeviceTaintRules',
];

/** The gates `--feature-gates` sets explicitly; a gate it does not name is absent. */
export type ExplicitFeatureGates = Readonly<Partial<Record<FeatureGateName, boolean>>>;

/**
 * Where a gate's value came from, strongest first: `--feature-gates`; the API server's own
 * `/metrics` (`kubernetes_feature_enabled`); the default of the Kubernetes version `/version`
 * reports; tolerator's built-in default (no cluster, or nothing read from it yet).
 */
export type FeatureGateSource = 'flag' | 'cluster-metrics' | 'cluster-version' | 'default';

export const featureGateSources: readonly FeatureGateSource[] = ['flag', 'cluster-metrics', 'cluster-version', 'default'];

export function isFeatureGateName(name: string): name is FeatureGateName {
  return (featureGateNames as readonly string[]).includes(name);
}
