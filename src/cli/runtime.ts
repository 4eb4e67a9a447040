/**
 * What every command builds from its settings: the admission pipeline, the tenancy policy source
 * (`--policies`) and, for the offline commands, the cluster state (`--cluster-state`). Shared by
 * `serve`, the offline commands and the tests, so all of them decide with the same code and
 * refuse the same broken inputs with the same message.
 */
import type { Logger } from 'pino';
import { emptyClusterFacts, type ClusterFacts } from '../admission/cluster-facts.js';
import type { KubernetesVersion } from '../api/feature-gate-history.js';
import type { FeatureGates } from '../api/feature-gates.js';
import { createPipeline, type Pipeline } from '../admission/pipeline.js';
import type { Metrics } from '../http/metrics.js';
import { parseClusterState, staticClusterFacts, type ClusterState } from '../kube/cluster-state-file.js';
import { createDedicatedNodes } from '../plugins/dedicated-nodes.js';
import { buildPlugins } from '../plugins/registry.js';
import { loadPolicyDirectory, watchPolicyDirectory } from '../tenancy/policy-directory.js';
import { emptyPolicySet, type PolicySet } from '../tenancy/policy-set.js';
import { formatPolicyLoadError } from '../tenancy/policy.js';
import { UsageError } from './flags.js';
import type { CommandIo } from './command.js';
import type { AdmissionSettings } from './options.js';

export interface Tenancy {
  readonly current: () => PolicySet;
  readonly healthy: () => boolean;
  readonly close: () => void;
}

/** Loads `--policies DIR` and keeps it current; a broken reload keeps the last good set. */
export function startTenancy(
  dir: string | undefined,
  logger: Logger,
  metrics: Metrics | undefined,
  watchForChanges: boolean,
  logPolicyCautions = true,
): Tenancy {
  if (dir === undefined) {
    return { current: () => emptyPolicySet, healthy: () => true, close: () => undefined };
  }
  // At startup there is no last good set to fall back on: refuse to start rather than serve
  // without the tenancy guarantee the operator asked for.
  let current = loadPolicies(dir);
  let healthy = true;
  metrics?.policiesLoaded.set(current.policies.length);
  logger.info({ dir, policies: current.policies.map((policy) => policy.name) }, 'tenancy policies loaded');
  if (logPolicyCautions) logCautions(logger, dir, current);
  if (!watchForChanges) {
    return { current: () => current, healthy: () => healthy, close: () => undefined };
  }
  const watcher = watchPolicyDirectory(dir, {
    onLoad: (set) => {
      current = set;
      healthy = true;
      metrics?.policiesLoaded.set(set.policies.length);
      logger.info({ dir, policies: set.policies.map((policy) => policy.name) }, 'tenancy policies reloaded');
      logCautions(logger, dir, set);
    },
    onError: (errors) => {
      healthy = false;
      metrics?.policyLoadErrors.inc();
      logger.error({ dir, errors: errors.map(formatPolicyLoadError) }, 'tenancy policies not reloaded; the last good set keeps serving');
    },
  });
  return {
    current: () => current,
    healthy: () => healthy,
    close: () => {
      watcher.close();
    },
  };
}

/**
 * Reads `--policies DIR` once, or throws a UsageError naming every policy that does not load: no
 * command decides without the tenancy guarantee the operator asked for. `separator` joins the
 * errors: one a line for `serve`, `review` and `explain`; `simulate` and `test` report each
 * problem on one line of their own output, so they pass '; '.
 */
export function loadPolicies(dir: string, separator = '\n  '): PolicySet {
  const loaded = loadPolicyDirectory(dir);
  if (loaded.errors.length > 0) {
    throw new UsageError(`--policies ${dir}: ${loaded.errors.map(formatPolicyLoadError).join(separator)}`);
  }
  return loaded.set;
}

/**
 * Reads a cluster-state file for an offline command (`--cluster-state`, or simulate's `--nodes`).
 * `readFile` is the command's, so tests can hand it text; each skipped document goes to `warn`,
 * since whether and how to show it is the command's business.
 */
export function readClusterState(file: string, readFile: (path: string) => string, warn: (warning: string) => void): ClusterState {
  const state = parseClusterState(readFile(file), file);
  for (const warning of state.warnings) warn(warning);
  return state;
}

/** The cluster an offline command decides against: the `--cluster-state` file, else no namespaces and no nodes. */
export function offlineClusterFacts(
  file: string | undefined,
  readFile: (path: string) => string,
  warn: (warning: string) => void,
): ClusterFacts {
  return file === undefined ? emptyClusterFacts : staticClusterFacts(readClusterState(file, readFile, warn));
}

/**
 * The pipeline an offline command decides with (`review`, `explain`): `--cluster-state` read, its
 * warnings in the command's log, and `--policies` loaded once, not watched. Refuses broken inputs
 * as `serve` refuses them at start.
 */
export function offlinePipeline(
  settings: AdmissionSettings,
  io: Pick<CommandIo, 'readFile' | 'log'>,
  options: { readonly printsCautions?: boolean } = {},
): { pipeline: Pipeline; policies: () => PolicySet; clusterFacts: ClusterFacts } {
  const logger = io.log();
  const clusterFacts = offlineClusterFacts(settings.clusterStateFile, io.readFile, (warning) => {
    logger.warn({ source: settings.clusterStateFile }, warning);
  });
  // A command that prints the policies' cautions itself (`explain`) would show each twice if the
  // log said them too: once on stdout, once as a warning on stderr.
  const tenancy = startTenancy(settings.policiesDir, logger, undefined, false, options.printsCautions !== true);
  return { pipeline: pipelineFor(settings, clusterFacts, tenancy.current), policies: tenancy.current, clusterFacts };
}

/** A policy that loads but lets tenants decide for themselves is served, and said so in the log, each time it loads. */
function logCautions(logger: Logger, dir: string, set: PolicySet): void {
  for (const policy of set.policies) {
    for (const caution of policy.cautions) {
      logger.warn({ dir, policy: policy.name, file: policy.file }, caution);
    }
  }
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
    dedicatedNodes: createDedicatedNodes(policies),
  });
  return createPipeline({ ...plugins, gates, clusterFacts, ...(serverVersion === undefined ? {} : { serverVersion }) });
}
