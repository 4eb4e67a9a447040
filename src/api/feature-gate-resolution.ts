/**
 * Which value each gate takes, and from where, given the flags and what was read from the
 * cluster: explicit flag > the API server's `/metrics` > the default of the version `/version`
 * reports > the value held before (at start, tolerator's built-in default). Pure: the edge reads
 * the cluster and keeps the result (docs/architecture.md#feature-gates).
 */
import { compareVersions, defaultAtVersion, type KubernetesVersion, type VersionDefault } from './feature-gate-history.js';
import {
  defaultFeatureGates,
  featureGateNames,
  type ExplicitFeatureGates,
  type FeatureGateName,
  type FeatureGates,
  type FeatureGateSource,
} from './feature-gates.js';

/** One read of the cluster; each part undefined when it could not be read. */
export interface ClusterGateReading {
  /** The gates `/metrics` reported with a usable sample. */
  readonly metrics: ReadonlyMap<FeatureGateName, boolean> | undefined;
  readonly version: KubernetesVersion | undefined;
}

export interface ResolvedGate {
  readonly enabled: boolean;
  readonly source: FeatureGateSource;
  /** For source cluster-version: the version and what the table says about it. */
  readonly version?: { readonly version: KubernetesVersion; readonly default: VersionDefault };
  /** For source cluster-metrics: the version `/version` reported in the same read, when it did. */
  readonly readAtVersion?: KubernetesVersion;
}

export type ResolvedGates = Readonly<Record<FeatureGateName, ResolvedGate>>;

/** Before anything is read: the flag where one is given, else the built-in default. */
export function initialGates(explicit: ExplicitFeatureGates): ResolvedGates {
  return mapGates((name) => {
    const flag = explicit[name];
    return flag !== undefined ? { enabled: flag, source: 'flag' } : { enabled: defaultFeatureGates[name], source: 'default' };
  });
}

/**
 * What the cluster says about one gate, whatever the flag: `/metrics` where it has the gate, else
 * the version's default; undefined when the reading has neither.
 */
export function clusterGate(name: FeatureGateName, reading: ClusterGateReading): ResolvedGate | undefined {
  const reported = reading.metrics?.get(name);
  if (reported !== undefined) {
    return { enabled: reported, source: 'cluster-metrics', ...(reading.version === undefined ? {} : { readAtVersion: reading.version }) };
  }
  if (reading.version === undefined) return undefined;
  const versionDefault = defaultAtVersion(name, reading.version);
  return { enabled: versionDefault.enabled, source: 'cluster-version', version: { version: reading.version, default: versionDefault } };
}

/**
 * The gates after one read: a flag always wins; a gate the reading says nothing about keeps its
 * previous value and source (the last known value beats a guess). So does a gate `/metrics`
 * reported before, when `/metrics` cannot be read now and `/version` still reports the version
 * it was read at: the version's default is a guess about a server whose own answer is known, and
 * taking it on every failed read (a timeout, a 503) would flip a gate the API server's flags set.
 * After an upgrade (another version) that answer no longer holds and the default does; a
 * `/metrics` that answers without the gate is an answer too (that server has no such gate).
 */
export function resolveGates(explicit: ExplicitFeatureGates, reading: ClusterGateReading, previous: ResolvedGates): ResolvedGates {
  return mapGates((name) => {
    const flag = explicit[name];
    if (flag !== undefined) return { enabled: flag, source: 'flag' };
    const cluster = clusterGate(name, reading);
    const before = previous[name];
    if (reading.metrics === undefined && cluster !== undefined && sameVersion(before.readAtVersion, reading.version)) return before;
    return cluster ?? before;
  });
}

/** Both known and equal. */
function sameVersion(a: KubernetesVersion | undefined, b: KubernetesVersion | undefined): boolean {
  return a !== undefined && b !== undefined && compareVersions(a, b) === 0;
}

/** The plain value the pure code receives. */
export function gateValues(resolved: ResolvedGates): FeatureGates {
  return mapGates((name) => resolved[name].enabled);
}

function mapGates<T>(value: (name: FeatureGateName) => T): Record<FeatureGateName, T> {
  const entries = featureGateNames.map((name) => [name, value(name)] as const);
  return Object.fromEntries(entries) as Record<FeatureGateName, T>;
}
