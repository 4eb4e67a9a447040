/**
 * The flags shared by `serve` and the offline commands, and their translation into the
 * configuration of the admission pipeline. Reading files happens here, at the edge; what the
 * files say is parsed by the pure modules.
 */
import { readFileSync } from 'node:fs';
import type { AdmissionSettings } from '../admission/pipeline-settings.js';
import {
  defaultFeatureGates,
  featureGateNames,
  isFeatureGateName,
  type ExplicitFeatureGates,
  type FeatureGateName,
  type FeatureGates,
} from '../api/feature-gates.js';
import { parseAdmissionConfig } from '../plugins/admission-config.js';
import { defaultTolerationSeconds } from '../plugins/default-toleration-seconds.js';
import type { PluginName } from '../plugins/plugin.js';
import { defaultOffPlugins, selectPlugins } from '../plugins/registry.js';
import { emptyPodNodeSelectorConfig } from '../scheduling/namespace-node-selector.js';
import {
  defaultDeviceTolerationsAnnotation,
  defaultDeviceTolerationsProblem,
  maxDefaultDeviceTolerationSeconds,
} from '../plugins/device-toleration-restriction.js';
import { unmarshalTolerations } from '../tolerations/go-json-tolerations.js';
import type { DeviceToleration } from '../tolerations/device-tolerations.js';
import type { DeviceTaintRuleEnforcement } from '../plugins/device-taint-rule-safety.js';
import { parseBool, parseDuration, UsageError, type FlagSpec, type ParsedFlags } from './flags.js';

export const admissionFlags = {
  'feature-gates': {
    kind: 'string',
    placeholder: 'A=true,B=false',
    help: `feature gates, as kube-apiserver's: ${featureGateNames.join(', ')}`,
  },
  'enable-plugins': {
    kind: 'string',
    placeholder: 'P1,P2',
    help: `admission plugins to enable besides the default ones (all but ${defaultOffPlugins.join(' and ')} are on by default)`,
  },
  'disable-plugins': { kind: 'string', placeholder: 'P1,P2', help: 'admission plugins to disable' },
  'default-not-ready-toleration-seconds': {
    kind: 'int',
    placeholder: 'SECONDS',
    help: `tolerationSeconds of the not-ready:NoExecute toleration added to every pod (default ${defaultTolerationSeconds})`,
  },
  'default-unreachable-toleration-seconds': {
    kind: 'int',
    placeholder: 'SECONDS',
    help: `tolerationSeconds of the unreachable:NoExecute toleration added to every pod (default ${defaultTolerationSeconds})`,
  },
  'admission-config': {
    kind: 'string',
    placeholder: 'FILE',
    help: "kube-apiserver AdmissionConfiguration (its PodTolerationRestriction and PodNodeSelector entries), PodTolerationRestriction's Configuration or PodNodeSelector's podNodeSelectorPluginConfig file",
  },
  'default-device-tolerations': {
    kind: 'string',
    placeholder: 'JSON',
    help: `the cluster's default device tolerations, a JSON array added to every new ResourceClaim and ResourceClaimTemplate request that lacks them (each NoExecute with tolerationSeconds 0 to ${maxDefaultDeviceTolerationSeconds}); a namespace's ${defaultDeviceTolerationsAnnotation} annotation replaces it`,
  },
  'device-taint-rule-safety': {
    kind: 'string',
    placeholder: 'deny|warn',
    help: 'what DeviceTaintRuleSafety does with an unsafe DeviceTaintRule: refuse it (deny, the default) or admit it with a warning (warn)',
  },
  policies: { kind: 'string', placeholder: 'DIR', help: 'directory of TenancyPolicy documents (reloaded when it changes)' },
  'cluster-state': { kind: 'string', placeholder: 'FILE', help: 'Namespace and Node manifests to decide from, instead of a cluster' },
} as const satisfies Record<string, FlagSpec>;

/**
 * What the settings configure that nothing will use, as warnings for the log: a PodNodeSelector
 * configuration given while the plugin is off (it is off by default, so a file carried over from a
 * kube-apiserver that enabled it would otherwise confine nothing, silently).
 */
export function unusedConfigurationWarnings(settings: Pick<AdmissionSettings, 'enabled' | 'podNodeSelector'>): string[] {
  if (settings.podNodeSelector === emptyPodNodeSelectorConfig || settings.enabled.includes('PodNodeSelector')) {
    return [];
  }
  return [
    '--admission-config configures PodNodeSelector, which is not enabled: namespaces are not confined to their node selectors (--enable-plugins PodNodeSelector turns it on)',
  ];
}

/** component-base's `--feature-gates` syntax: comma-separated `Name=bool`, unknown names refused; the last value of a name wins. */
export function parseExplicitFeatureGates(raw: string | undefined): ExplicitFeatureGates {
  const gates: Partial<Record<FeatureGateName, boolean>> = {};
  for (const entry of (raw ?? '').split(',')) {
    const item = entry.trim();
    if (item === '') {
      continue;
    }
    const eq = item.indexOf('=');
    if (eq === -1) {
      throw new UsageError(`--feature-gates: missing bool value for ${item}`);
    }
    const name = item.slice(0, eq).trim();
    if (!isFeatureGateName(name)) {
      throw new UsageError(`--feature-gates: unrecognized feature gate: ${name}`);
    }
    gates[name] = parseBool('feature-gates', item.slice(eq + 1).trim());
  }
  return gates;
}

/** The flag over the built-in defaults. */
export function parseFeatureGates(raw: string | undefined): FeatureGates {
  return { ...defaultFeatureGates, ...parseExplicitFeatureGates(raw) };
}

/**
 * `serve --feature-gate-refresh-interval`: 5 min by default. A control-plane upgrade (the moment a
 * gate's value changes) replaces API servers over tens of minutes, so tolerator follows it within
 * 5 min; each read makes the API server render its /metrics (a few MB) once per replica, a tenth
 * of what one Prometheus scraping it every 30 s costs. Below 10 s a replica would read that body
 * more often than a typical scrape interval (15–60 s) for nothing: refused as a mistake.
 */
export const defaultRefreshInterval = '5m';
export const minRefreshIntervalSeconds = 10;
/**
 * 596 h: the longest whole number of hours below 2^31 - 1 ms (596.5 h), the longest delay
 * setTimeout keeps; above it Node.js fires after 1 ms, and the gates would be re-read back to back.
 */
export const maxRefreshIntervalHours = 596;

/** The interval in milliseconds; 0 means "read at start only". */
export function parseRefreshInterval(raw: string | undefined): number {
  const ms = parseDuration('feature-gate-refresh-interval', raw ?? defaultRefreshInterval);
  if (ms !== 0 && ms < minRefreshIntervalSeconds * 1000) {
    throw new UsageError(
      `--feature-gate-refresh-interval must be 0 (read once, at start) or at least ${minRefreshIntervalSeconds}s, got ${raw}`,
    );
  }
  if (!(ms <= maxRefreshIntervalHours * 3_600_000)) {
    throw new UsageError(
      `--feature-gate-refresh-interval must be at most ${maxRefreshIntervalHours}h (the longest timer Node.js keeps), got ${raw}`,
    );
  }
  return ms;
}

/**
 * 2,147,483 s: the longest whole number of seconds within 2^31 - 1 ms, the longest delay
 * setTimeout keeps; a longer `--shutdown-delay` or `--shutdown-grace` would fire after 1 ms.
 */
export const maxShutdownSeconds = 2_147_483;

/** `--shutdown-delay` / `--shutdown-grace` in seconds: refused below 0 or beyond the longest timer. */
export function checkShutdownSeconds(flag: 'shutdown-delay' | 'shutdown-grace', seconds: number): number {
  if (!(seconds >= 0 && seconds <= maxShutdownSeconds)) {
    throw new UsageError(`--${flag} must be between 0 and ${maxShutdownSeconds} seconds (the longest timer Node.js keeps), got ${seconds}`);
  }
  return seconds;
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/**
 * tolerationSeconds is an int64; a JSON number holds integers exactly only up to 2^53 - 1, so a
 * larger flag value could not be written into a pod faithfully and is refused.
 */
function seconds(flags: ParsedFlags, name: string): number {
  const value = flags.values.get(name);
  if (value === undefined) {
    return defaultTolerationSeconds;
  }
  const big = value as bigint;
  if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new UsageError(`--${name}: ${big} is beyond what a JSON number carries exactly (±${Number.MAX_SAFE_INTEGER})`);
  }
  return Number(big);
}

function defaultDeviceTolerations(raw: string | undefined): readonly DeviceToleration[] {
  if (raw === undefined || raw.trim() === '') return [];
  const decoded = unmarshalTolerations(raw, 'v1');
  if (decoded.error !== undefined) throw new UsageError(`--default-device-tolerations: ${decoded.error}`);
  const tolerations = decoded.tolerations as readonly DeviceToleration[];
  const problem = defaultDeviceTolerationsProblem(tolerations);
  if (problem !== undefined) throw new UsageError(`--default-device-tolerations: ${problem}`);
  return tolerations;
}

function deviceTaintRuleEnforcement(raw: string | undefined): DeviceTaintRuleEnforcement {
  switch (raw) {
    case undefined:
    case 'deny':
      return 'Deny';
    case 'warn':
      return 'Warn';
    default:
      throw new UsageError(`--device-taint-rule-safety: ${JSON.stringify(raw)} is neither deny nor warn`);
  }
}

export function readAdmissionSettings(flags: ParsedFlags): AdmissionSettings {
  const str = (name: string): string | undefined => flags.values.get(name) as string | undefined;
  const explicitGates = parseExplicitFeatureGates(str('feature-gates'));
  const gates: FeatureGates = { ...defaultFeatureGates, ...explicitGates };
  let enabled: readonly PluginName[];
  try {
    enabled = selectPlugins(list(str('enable-plugins')), list(str('disable-plugins')));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const configFile = str('admission-config');
  const { podTolerationRestriction, podNodeSelector } =
    configFile === undefined
      ? { podTolerationRestriction: {}, podNodeSelector: emptyPodNodeSelectorConfig }
      : parseAdmissionConfig(readFileSync(configFile, 'utf8'), configFile, {
          allowComparisonOperators: gates.TaintTolerationComparisonOperators,
          readFile: (path) => readFileSync(path, 'utf8'),
        });
  return {
    gates,
    explicitGates,
    enabled,
    notReadySeconds: seconds(flags, 'default-not-ready-toleration-seconds'),
    unreachableSeconds: seconds(flags, 'default-unreachable-toleration-seconds'),
    podTolerationRestriction,
    podNodeSelector,
    deviceTaintRuleSafety: deviceTaintRuleEnforcement(str('device-taint-rule-safety')),
    defaultDeviceTolerations: defaultDeviceTolerations(str('default-device-tolerations')),
    policiesDir: str('policies'),
    clusterStateFile: str('cluster-state'),
  };
}
