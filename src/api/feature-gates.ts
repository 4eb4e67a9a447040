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
}

export const defaultFeatureGates: FeatureGates = {
  TaintTolerationComparisonOperators: false,
  PodLevelResources: true,
};

export type FeatureGateName = keyof FeatureGates;

export const featureGateNames: readonly FeatureGateName[] = ['TaintTolerationComparisonOperators', 'PodLevelResources'];
