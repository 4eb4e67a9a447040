/**
 * Building the admission pipeline and the tenancy policy source from settings: shared by
 * `serve`, the offline commands and the tests, so all of them decide with the same code.
 */
import type { Logger } from 'pino';
import type { ClusterFacts } from '../admission/cluster-facts.js';
import { createPipeline, type Pipeline } from '../admission/pipeline.js';
import type { Metrics } from '../http/metrics.js';
import { createDedicatedNodes } from '../plugins/dedicated-nodes.js';
import { buildPlugins } from '../plugins/registry.js';
import { loadPolicyDirectory, watchPolicyDirectory } from '../tenancy/policy-directory.js';
import { emptyPolicySet, type PolicySet } from '../tenancy/policy-set.js';
import { formatPolicyLoadError } from '../tenancy/policy.js';
import { UsageError } from './flags.js';
import type { AdmissionSettings } from './options.js';

export interface Tenancy {
  readonly current: () => PolicySet;
  readonly healthy: () => boolean;
  readonly close: () => void;
}

/** Loads `--policies DIR` and keeps it current; a broken reload keeps the last good set. */
export function startTenancy(dir: string | undefined, logger: Logger, metrics: Metrics | undefined, watchForChanges: boolean): Tenancy {
  if (dir === undefined) {
    return { current: () => emptyPolicySet, healthy: () => true, close: () => undefined };
  }
  const initial = loadPolicyDirectory(dir);
  if (initial.errors.length > 0) {
    // At startup there is no last good set to fall back on: refuse to start rather than serve
    // without the tenancy guarantee the operator asked for.
    throw new UsageError(`--policies ${dir}: ${initial.errors.map(formatPolicyLoadError).join('\n  ')}`);
  }
  let current = initial.set;
  let healthy = true;
  metrics?.policiesLoaded.set(current.policies.length);
  logger.info({ dir, policies: current.policies.map((policy) => policy.name) }, 'tenancy policies loaded');
  logCautions(logger, dir, current);
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
  return { current: () => current, healthy: () => healthy, close: () => {
    watcher.close();
  } };
}

/** A policy that loads but lets tenants decide for themselves is served, and said so in the log, each time it loads. */
function logCautions(logger: Logger, dir: string, set: PolicySet): void {
  for (const policy of set.policies) {
    for (const caution of policy.cautions) {
      logger.warn({ dir, policy: policy.name, file: policy.file }, caution);
    }
  }
}

export function pipelineFor(settings: AdmissionSettings, clusterFacts: ClusterFacts, policies: () => PolicySet): Pipeline {
  const plugins = buildPlugins({
    enabled: settings.enabled,
    defaultTolerationSeconds: { notReadySeconds: settings.notReadySeconds, unreachableSeconds: settings.unreachableSeconds },
    podTolerationRestriction: settings.podTolerationRestriction,
    dedicatedNodes: createDedicatedNodes(policies),
  });
  return createPipeline({ ...plugins, gates: settings.gates, clusterFacts });
}

