/**
 * The default of each gate by Kubernetes version, and the version a cluster's `/version` reports:
 * what tolerator assumes about a gate when the API server's `/metrics` does not say (see
 * docs/architecture.md#feature-gates).
 *
 * Upstream: pkg/features/kube_features.go, `defaultVersionedKubernetesFeatureGates`, read at the
 * tags v1.35.8, v1.36.3 and v1.37.2 (where the scheduler's gates moved into a file of their own,
 * still registered in every Kubernetes binary); each row below is also what the real API server
 * of that build reports in `kubernetes_feature_enabled` (test/e2e/feature-gate-table.e2e.ts):
 *
 *   PodLevelResources:                   1.32 alpha, off; 1.34 beta, on (unchanged through 1.37)
 *   PodLevelResourcesFixKubeletQOSClass: 1.37 beta, on
 *   TaintTolerationComparisonOperators:  1.35 alpha, off (unchanged through 1.37)
 *   DRADeviceTaints:                     1.33 alpha, off; 1.36 beta, on; 1.37 GA, on
 *   DRADeviceTaintRules:                 1.35 alpha, off; 1.36 beta, off; 1.37 GA, on
 *
 * A version before a gate's first entry does not have the gate at all: the feature does not
 * exist there (the API server refuses the fields or operators it guards), which for admission is
 * the same as off.
 */
import { featureGateNames, type FeatureGateName, type FeatureGates } from './feature-gates.js';

export interface KubernetesVersion {
  readonly major: number;
  readonly minor: number;
}

/** The `stage` label of `kubernetes_feature_enabled` (component-base's `featuregate.prerelease`; GA is the empty string there). */
export type FeatureStage = 'ALPHA' | 'BETA' | 'GA';

interface VersionedDefault {
  /** The first minor version this entry applies to; it holds until the next entry. */
  readonly since: KubernetesVersion;
  readonly enabled: boolean;
  readonly stage: FeatureStage;
}

/** Each gate's entries, oldest first. */
export const featureGateHistory: Readonly<Record<FeatureGateName, readonly VersionedDefault[]>> = {
  TaintTolerationComparisonOperators: [{ since: { major: 1, minor: 35 }, enabled: false, stage: 'ALPHA' }],
  PodLevelResources: [
    { since: { major: 1, minor: 32 }, enabled: false, stage: 'ALPHA' },
    { since: { major: 1, minor: 34 }, enabled: true, stage: 'BETA' },
  ],
  PodLevelResourcesFixKubeletQOSClass: [{ since: { major: 1, minor: 37 }, enabled: true, stage: 'BETA' }],
  DRADeviceTaints: [
    { since: { major: 1, minor: 33 }, enabled: false, stage: 'ALPHA' },
    { since: { major: 1, minor: 36 }, enabled: true, stage: 'BETA' },
    { since: { major: 1, minor: 37 }, enabled: true, stage: 'GA' },
  ],
  DRADeviceTaintRules: [
    { since: { major: 1, minor: 35 }, enabled: false, stage: 'ALPHA' },
    { since: { major: 1, minor: 36 }, enabled: false, stage: 'BETA' },
    { since: { major: 1, minor: 37 }, enabled: true, stage: 'GA' },
  ],
};

/** The newest version whose upstream entries the table was checked against (the module comment). */
export const featureGateHistoryCheckedThrough: KubernetesVersion = { major: 1, minor: 37 };

export interface VersionDefault {
  readonly enabled: boolean;
  /** The gate's stage at that version, or 'absent' before its first entry. */
  readonly stage: FeatureStage | 'absent';
  /**
   * The version is newer than the table was checked through: the newest entry is assumed to
   * hold (a gate's default changes only at a graduation, which the next table update records).
   */
  readonly beyondTable: boolean;
}

export function compareVersions(a: KubernetesVersion, b: KubernetesVersion): number {
  return a.major !== b.major ? a.major - b.major : a.minor - b.minor;
}

/** The default of `name` in a cluster of `version`, from the table above. */
export function defaultAtVersion(name: FeatureGateName, version: KubernetesVersion): VersionDefault {
  const beyondTable = compareVersions(version, featureGateHistoryCheckedThrough) > 0;
  let current: VersionDefault = { enabled: false, stage: 'absent', beyondTable };
  for (const entry of featureGateHistory[name]) {
    if (compareVersions(entry.since, version) > 0) break;
    current = { enabled: entry.enabled, stage: entry.stage, beyondTable };
  }
  return current;
}

/** Every gate's default in a cluster of `version`: what a server of that version runs without `--feature-gates`. */
export function defaultGatesAtVersion(version: KubernetesVersion): FeatureGates {
  return Object.fromEntries(featureGateNames.map((name) => [name, defaultAtVersion(name, version).enabled])) as unknown as FeatureGates;
}

export function formatVersion(version: KubernetesVersion): string {
  return `${version.major}.${version.minor}`;
}

/**
 * The major.minor of a `/version` answer (apimachinery's `version.Info`): from `gitVersion`
 * (`v1.35.2`, `v1.35.2-eks-4a7b1c3`, `v1.31.1+k3s1`, `v1.30.5-gke.1014001`), else from `major`
 * and `minor`, which some providers suffix with `+` (`"minor": "30+"`). undefined when neither
 * reads as a version: the caller then knows no version, rather than a wrong one.
 */
export function parseKubernetesVersion(info: unknown): KubernetesVersion | undefined {
  if (typeof info !== 'object' || info === null || Array.isArray(info)) return undefined;
  const { gitVersion, major, minor } = info as Record<string, unknown>;
  if (typeof gitVersion === 'string') {
    const fromGit = versionPrefix(gitVersion.startsWith('v') ? gitVersion.slice(1) : gitVersion);
    if (fromGit !== undefined) return fromGit;
  }
  if (typeof major === 'string' && typeof minor === 'string') {
    const majorNumber = wholeNumber(major);
    const minorDigits = leadingDigits(minor, 0);
    const rest = minor.slice(minorDigits);
    if (majorNumber !== undefined && minorDigits > 0 && (rest === '' || rest === '+')) {
      return checked(majorNumber, Number(minor.slice(0, minorDigits)));
    }
  }
  return undefined;
}

/**
 * At most four digits per number: Kubernetes is at 1.x with x in the tens, and a longer run of
 * digits is not a version (nor a number a comparison should carry).
 */
const maxDigits = 4;

/** `MAJOR.MINOR` at the start of `text`, followed by the end or by something that is not a digit (`.2`, `-eks…`, `+k3s1`). */
function versionPrefix(text: string): KubernetesVersion | undefined {
  const majorDigits = leadingDigits(text, 0);
  if (majorDigits === 0 || text[majorDigits] !== '.') return undefined;
  const minorStart = majorDigits + 1;
  const minorDigits = leadingDigits(text, minorStart);
  if (minorDigits === 0) return undefined;
  return checked(Number(text.slice(0, majorDigits)), Number(text.slice(minorStart, minorStart + minorDigits)));
}

function wholeNumber(text: string): number | undefined {
  const digits = leadingDigits(text, 0);
  return digits > 0 && digits === text.length ? Number(text) : undefined;
}

/** How many ASCII digits start at `from` — 0 when more than maxDigits do, so an overlong number never reads as one. */
function leadingDigits(text: string, from: number): number {
  let end = from;
  while (end < text.length && end - from <= maxDigits && text.charCodeAt(end) >= 0x30 && text.charCodeAt(end) <= 0x39) end++;
  const count = end - from;
  return count > maxDigits ? 0 : count;
}

function checked(major: number, minor: number): KubernetesVersion | undefined {
  return major >= 1 ? { major, minor } : undefined;
}
