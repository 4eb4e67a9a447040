/**
 * Builds the webhook exactly as `tolerator serve` does from a list of flags (createWebhookApp,
 * the composition root's), minus the TLS listener, for supertest; and loads fixtures as fresh copies.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { emptyClusterFacts } from '../../src/admission/cluster-facts.js';
import type { Pipeline } from '../../src/admission/pipeline.js';
import { parseFlags } from '../../src/cli/flags.js';
import { admissionFlags, readAdmissionSettings } from '../../src/cli/options.js';
import { pipelineFor } from '../../src/admission/pipeline-settings.js';
import { startTenancy } from '../../src/server/tenancy-policies.js';
import { createMetrics, type Metrics } from '../../src/http/metrics.js';
import { loadClusterStateFile } from '../../src/kube/cluster-state-file.js';
import { createWebhookApp } from '../../src/server/start-server.js';
import type { RequestListener } from 'node:http';

export const silentLogger = pino({ level: 'silent' });

export function pipelineFromArgs(args: readonly string[]): Pipeline {
  const settings = readAdmissionSettings(parseFlags(args, admissionFlags));
  const facts = settings.clusterStateFile === undefined ? emptyClusterFacts : loadClusterStateFile(settings.clusterStateFile, silentLogger);
  const tenancy = startTenancy(settings.policiesDir, silentLogger, undefined, false);
  return pipelineFor(settings, facts, tenancy.current);
}

/** The app `tolerator serve` serves (src/server/start-server.ts builds it the same way), for supertest. */
export function appFromArgs(args: readonly string[], metrics: Metrics = createMetrics({ collectProcessMetrics: false })): RequestListener {
  const settings = readAdmissionSettings(parseFlags(args, admissionFlags));
  const clusterFacts =
    settings.clusterStateFile === undefined ? emptyClusterFacts : loadClusterStateFile(settings.clusterStateFile, silentLogger);
  return createWebhookApp({
    settings,
    clusterFacts,
    policies: startTenancy(settings.policiesDir, silentLogger, undefined, false).current,
    logger: silentLogger,
    metrics,
    readiness: { check: () => ({ ready: true, reasons: [] }) },
    now: () => 0,
  });
}

export interface ReviewFixture {
  readonly name: string;
  readonly description: string;
  readonly webhook: 'mutate' | 'validate';
  readonly args: readonly string[];
  readonly expect: {
    readonly allowed: boolean;
    readonly code?: number;
    readonly message?: string;
    readonly patched?: boolean;
    readonly tolerations?: readonly unknown[];
    readonly affinity?: unknown;
    /** The pod spec's nodeSelector after the patch (for a DaemonSet, its template's). */
    readonly nodeSelector?: Readonly<Record<string, string>>;
  };
  readonly review: {
    request: { uid: string; object: Record<string, unknown> | null; operation: string; [key: string]: unknown };
    [key: string]: unknown;
  };
}

export const fixturesDir = join(import.meta.dirname, '..', 'fixtures');

/** Every review fixture, each parsed anew from its file so no test can change another's input. */
export function loadReviewFixtures(): ReviewFixture[] {
  const dir = join(fixturesDir, 'reviews');
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => ({
      name: file.replace(/\.json$/, ''),
      ...(JSON.parse(readFileSync(join(dir, file), 'utf8')) as Omit<ReviewFixture, 'name'>),
    }));
}

export function loadReviewFixture(name: string): ReviewFixture {
  const fixture = loadReviewFixtures().find((candidate) => candidate.name === name);
  if (fixture === undefined) {
    throw new Error(`no fixture ${name}`);
  }
  return fixture;
}
