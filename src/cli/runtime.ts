/**
 * What an offline command builds from its settings: the cluster state (`--cluster-state`) and the
 * pipeline it decides with, `--policies` loaded once. The pipeline itself is built as `serve`
 * builds it (src/admission/pipeline-settings.ts), and the policies are loaded as `serve` loads them
 * (src/server/tenancy-policies.ts), so every command refuses the same broken inputs with the same
 * message.
 */
import { emptyClusterFacts, type ClusterFacts } from '../admission/cluster-facts.js';
import type { Pipeline } from '../admission/pipeline.js';
import { pipelineFor, type AdmissionSettings } from '../admission/pipeline-settings.js';
import { parseClusterState, staticClusterFacts, type ClusterState } from '../kube/cluster-state-file.js';
import { startTenancy } from '../server/tenancy-policies.js';
import type { PolicySet } from '../tenancy/policy-set.js';
import type { CommandIo } from './command.js';

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
