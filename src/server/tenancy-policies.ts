/**
 * The tenancy policy source (`--policies DIR`): loaded once, or loaded and kept current. `serve`
 * watches the directory; the offline commands, the review workers' tests and the harness load it
 * once. Every path refuses a directory that does not load with the same message.
 */
import type { Logger } from 'pino';
import type { Metrics } from '../http/metrics.js';
import { loadPolicyDirectory, watchPolicyDirectory } from '../tenancy/policy-directory.js';
import { emptyPolicySet, type PolicySet } from '../tenancy/policy-set.js';
import { formatPolicyLoadError } from '../tenancy/policy.js';
import { UsageError } from './usage-error.js';

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

/** A policy that loads but lets tenants decide for themselves is served, and said so in the log, each time it loads. */
function logCautions(logger: Logger, dir: string, set: PolicySet): void {
  for (const policy of set.policies) {
    for (const caution of policy.cautions) {
      logger.warn({ dir, policy: policy.name, file: policy.file }, caution);
    }
  }
}
