/**
 * The feature gates `serve` decides with, kept current: the flag where one is given, else what the
 * cluster says (its `/metrics`, else its version's default), re-read periodically because control
 * planes are upgraded under running webhooks. The pipeline asks for `current()` once per review
 * and hands the plain value to the pure code; nothing else holds the gates.
 *
 * Each change is logged (gate, value, source), an explicit flag that disagrees with the cluster is
 * warned about each time the cluster's answer changes (not on every read), and a cluster that
 * cannot be read keeps the last known value (at start, the built-in default).
 */
import { formatVersion, type KubernetesVersion } from '../api/feature-gate-history.js';
import { gateValues, initialGates, resolveGates, type ResolvedGate, type ResolvedGates } from '../api/feature-gate-resolution.js';
import { featureGateNames, type ExplicitFeatureGates, type FeatureGateName, type FeatureGates } from '../api/feature-gates.js';
import type { ClusterGateReport } from './cluster-feature-gates.js';
import type { KubeLogger } from './kube-logger.js';

export interface FeatureGateSourceOptions {
  readonly explicit: ExplicitFeatureGates;
  /** One read of the cluster; undefined when there is no cluster (the flag and the built-in defaults then hold). */
  readonly read: (() => Promise<ClusterGateReport>) | undefined;
  /** Between two reads; 0 reads once, at start. */
  readonly refreshIntervalMs: number;
  /** After a read that got neither /metrics nor /version (defaults to retryIntervalMs below, or refreshIntervalMs if shorter). */
  readonly retryIntervalMs?: number;
  /** A read that has not reported by then counts as failed (defaults to 15 s). */
  readonly readDeadlineMs?: number;
  readonly logger: KubeLogger;
  /** The wall clock, for the time of the last read shown in /readyz. */
  readonly now?: () => Date;
}

export interface FeatureGateSource {
  /** The gates for the next review. */
  current(): FeatureGates;
  /** The gates with where each came from (for /metrics and the log). */
  resolved(): ResolvedGates;
  /** Whether the first read of the cluster is over, read or not (at once without a cluster). */
  settled(): boolean;
  /** The version `/version` last reported (kept when a later read fails); undefined before any, or without a cluster. */
  serverVersion(): KubernetesVersion | undefined;
  /** What /readyz?verbose shows: each gate with its source, and the last read. */
  detail(): readonly string[];
  /** Reads the cluster now (the timer does so on its own); concurrent calls share one read. */
  refresh(): Promise<void>;
  stop(): void;
}

/**
 * - retryIntervalMs 30 s: a read that got nothing at all (the API server unreachable, a deadline)
 *   is retried sooner than the regular interval, so that a replica that started during an outage
 *   does not decide with the built-in defaults for a whole interval; 30 s is the informers'
 *   restart backoff cap (src/kube/informers.ts), the pace tolerator already asks of a struggling
 *   API server.
 * - readDeadlineMs 15 s: readClusterFeatureGates bounds each GET to 10 s itself; this bounds
 *   what comes before the GETs too (an exec credential plugin that hangs), with 5 s to spare.
 */
const defaultRetryIntervalMs = 30_000;
const defaultReadDeadlineMs = 15_000;

export function startFeatureGateSource(options: FeatureGateSourceOptions): FeatureGateSource {
  const { explicit, read, logger } = options;
  const now = options.now ?? ((): Date => new Date());
  const retryMs = Math.min(options.retryIntervalMs ?? defaultRetryIntervalMs, options.refreshIntervalMs || Infinity);
  const deadlineMs = options.readDeadlineMs ?? defaultReadDeadlineMs;

  let resolved = initialGates(explicit);
  let values = gateValues(resolved);
  let version: KubernetesVersion | undefined;
  let settled = read === undefined;
  // An object, not a `let`: read again after an await, where a narrowed local would not be.
  const life = { stopped: false };
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> | undefined;
  let lastRead: { at: Date; report: ClusterGateReport } | undefined;
  /**
   * What the cluster says about each gate, whatever the flags: resolved as an unflagged gate is (so
   * a failed /metrics read keeps its last answer there too), to warn about a disagreeing flag.
   */
  let clusterView = initialGates({});
  /** That answer as last warned about, to warn once per change. */
  const lastClusterAnswer = new Map<FeatureGateName, string>();
  let lastProblems = '';

  for (const name of featureGateNames) {
    logger.info(gateFields(name, resolved[name]), `feature gate ${name}=${resolved[name].enabled} from ${resolved[name].source}`);
  }

  const apply = (report: ClusterGateReport): void => {
    version = report.version ?? version;
    const next = resolveGates(explicit, report, resolved);
    clusterView = resolveGates({}, report, clusterView);
    for (const name of featureGateNames) {
      const before = resolved[name];
      const after = next[name];
      if (before.enabled !== after.enabled || before.source !== after.source) {
        logger.info(
          { ...gateFields(name, after), previous: { enabled: before.enabled, source: before.source }, stage: report.stages.get(name) },
          `feature gate ${name}=${after.enabled} from ${after.source}${beyondTableNote(after)}`,
        );
      }
      const cluster = clusterView[name].source === 'default' ? undefined : clusterView[name];
      const answer = cluster === undefined ? '' : `${cluster.enabled}/${cluster.source}`;
      if (answer !== (lastClusterAnswer.get(name) ?? '')) {
        lastClusterAnswer.set(name, answer);
        const flag = explicit[name];
        if (flag !== undefined && cluster !== undefined && cluster.enabled !== flag) {
          logger.warn(
            { gate: name, flag, cluster: cluster.enabled, clusterSource: cluster.source },
            `--feature-gates sets ${name}=${flag} but the cluster has it ${cluster.enabled ? 'on' : 'off'} (${describeSource(cluster)}); ` +
              'tolerator follows the flag, and so may allow what the API server refuses or refuse what it allows',
          );
        }
      }
    }
    const problems = [report.metricsProblem, report.versionProblem].filter((problem) => problem !== undefined).join('; ');
    if (problems !== lastProblems) {
      lastProblems = problems;
      if (problems !== '') {
        logger.warn(
          { problems },
          'feature gates: the cluster did not answer everything; the gates it did not report fall back (see /readyz?verbose)',
        );
      } else {
        logger.info({}, 'feature gates: the cluster answered /metrics and /version');
      }
    }
    resolved = next;
    values = gateValues(next);
    lastRead = { at: now(), report };
  };

  const readOnce = async (): Promise<ClusterGateReport> => {
    if (read === undefined) throw new Error('no cluster');
    let deadline: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_resolve, reject) => {
      deadline = setTimeout(() => {
        reject(new Error(`no answer within ${deadlineMs} ms`));
      }, deadlineMs);
    });
    try {
      return await Promise.race([read(), expired]);
    } finally {
      clearTimeout(deadline);
    }
  };

  const schedule = (delayMs: number): void => {
    if (life.stopped || delayMs <= 0) return;
    timer = setTimeout(() => {
      timer = undefined;
      void refresh();
    }, delayMs);
    // The refresh must not keep a process alive that is otherwise done.
    timer.unref();
  };

  const refresh = (): Promise<void> => {
    if (read === undefined || life.stopped) return Promise.resolve();
    inFlight ??= (async () => {
      clearTimeout(timer);
      timer = undefined;
      let report: ClusterGateReport;
      try {
        report = await readOnce();
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        report = { metrics: undefined, version: undefined, stages: new Map(), metricsProblem: message, versionProblem: message };
      }
      if (life.stopped) return;
      apply(report);
      settled = true;
      const gotNothing = report.metrics === undefined && report.version === undefined;
      schedule(options.refreshIntervalMs === 0 ? 0 : gotNothing ? retryMs : options.refreshIntervalMs);
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  void refresh();

  return {
    current: () => values,
    resolved: () => resolved,
    settled: () => settled,
    serverVersion: () => version,
    detail() {
      const lines = featureGateNames.map(
        (name) => `feature gate ${name}=${resolved[name].enabled} source=${describeSource(resolved[name])}`,
      );
      if (read === undefined) {
        lines.push('feature gates: no cluster; --feature-gates and the built-in defaults apply');
      } else if (lastRead === undefined) {
        lines.push('feature gates: the cluster has not been read yet');
      } else {
        const { at, report } = lastRead;
        const metrics = report.metricsProblem ?? 'ok';
        const version =
          report.versionProblem ?? `ok (${report.gitVersion ?? (report.version === undefined ? '' : formatVersion(report.version))})`;
        lines.push(`feature gates: cluster last read at ${at.toISOString()}; /metrics: ${metrics}; /version: ${version}`);
      }
      return lines;
    },
    refresh,
    stop() {
      life.stopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}

function gateFields(name: FeatureGateName, gate: ResolvedGate): Record<string, unknown> {
  return {
    gate: name,
    enabled: gate.enabled,
    source: gate.source,
    ...(gate.version === undefined
      ? {}
      : {
          clusterVersion: formatVersion(gate.version.version),
          versionStage: gate.version.default.stage,
          beyondTable: gate.version.default.beyondTable,
        }),
  };
}

/** The source, and for a version default which version and stage it came from. */
function describeSource(gate: ResolvedGate): string {
  if (gate.version === undefined) return gate.source;
  const { version, default: versionDefault } = gate.version;
  const stage = versionDefault.stage === 'absent' ? 'not in that version' : `${versionDefault.stage.toLowerCase()} default`;
  return `${gate.source} (v${formatVersion(version)}: ${stage}${versionDefault.beyondTable ? ', assumed: newer than the table' : ''})`;
}

function beyondTableNote(gate: ResolvedGate): string {
  if (gate.version === undefined || !gate.version.default.beyondTable) return '';
  return ` (v${formatVersion(gate.version.version)} is newer than tolerator's table of gate defaults; assuming the newest entry still holds)`;
}
