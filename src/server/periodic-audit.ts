/**
 * The periodic audit of `tolerator serve --audit-interval DURATION`: every interval, the cluster's
 * pods are listed page by page and judged by the audit rules (src/server/audit-run.ts, the same run
 * as `tolerator audit`), then the DRA ResourceClaims the same way where the API server serves them
 * and a policy has a device taint (`foreign-device-toleration`), and the result is published as
 * metrics and, when their CRD is installed, as policy reports.
 *
 * It never slows admission, which shares the one thread:
 * - pods are listed in pages of `pageSize` (never one giant list, never a cache of every pod), one
 *   page in memory at a time, at most `requestsPerSecond` requests (a live read of a node the
 *   informers lack included);
 * - between pods, once `sliceMs` of work has been done, the run yields to the event loop
 *   (setImmediate), so a review that arrived meanwhile waits at most about that long;
 * - runs never overlap: the next one is scheduled an interval after the previous one ended.
 *
 * Memory: a run keeps what it publishes, not every finding (src/audit/audit-summary.ts): exact
 * counts by namespace, rule and policy, and the first maxResultsPerReport findings of each
 * namespace. A tenant decides how many violating pods its namespace holds (a Warn policy lets them
 * in, old pods stay), at about 350 B a finding: 150,000 pods breaking 3 rules each would be
 * 150 MiB or more held in the 512 MiB the webhook answers reviews with.
 *
 * Shutdown: stop() aborts the request in flight (a page may take up to 60 s to arrive) and any
 * pause, and resolves once the run has unwound; a stopped run publishes nothing, so the server
 * exits within its grace period.
 *
 * A run that fails (a list refused or cut mid-page, a list whose continue token expired too many
 * times) changes no metric but `tolerator_audit_runs_total{result="failed"}`, logs why, and the
 * next interval tries again: the last completed audit stays what is published.
 */
import { setTimeout as sleep, setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { ClusterFacts } from '../admission/cluster-facts.js';
import type { AuditSettings } from '../audit/audit-rules.js';
import { violationCounts, type AuditResult } from '../audit/audit-summary.js';
import { buildPolicyReports, maxResultsPerReport } from '../audit/policy-reports.js';
import type { Metrics } from '../http/metrics.js';
import type { ApiRequest } from '../kube/api-requests.js';
import { defaultMaxItemBytes, defaultMaxRestarts, listInPages, probeList } from '../kube/paged-list.js';
import { discoverReportApi, writePolicyReports } from '../kube/policy-report-writer.js';
import { runAudit, type PodPages } from './audit-run.js';

/** Every namespace's DRA claims (resource.k8s.io/v1: Kubernetes 1.34 and later). */
export const resourceClaimsPath = '/apis/resource.k8s.io/v1/resourceclaims';

/**
 * The pace, and why:
 * - pageSize 100: a stored pod is 3 to 8 KB of JSON (managedFields included), so a page is under
 *   1 MB; it is parsed pod by pod as it arrives (src/kube/list-items.ts), each parse a fraction of
 *   a millisecond between reviews, and held as its parsed pods while they are judged.
 * - maxPageBytes 4 MiB: a tenant decides how large its pods are, up to etcd's 1.5 MiB per object
 *   (--max-request-bytes) and the API server's 3 MiB per request body, and a page of 100 such pods
 *   would be 150 to 300 MB to hold and parse at once, past the container's 512 MiB and blocking
 *   reviews for a second or more. A page over 4 MiB is asked for again with half the limit
 *   (src/kube/paged-list.ts): 4 MiB is above one pod as its author writes it within those limits
 *   and above a page of 100 ordinary pods, so a cluster of ordinary pods is never asked twice. One
 *   pod can be over it on the wire: the API server writes `<`, `>` and `&` as `\u003c` (six bytes
 *   for one), so a pod of 0.8 MB full of them is 4.8 MB; it is read alone with maxItemBytes.
 * - maxItemBytes 18 MiB + 64 KiB (defaultMaxItemBytes, src/kube/paged-list.ts): the largest one
 *   object can be on the wire (3 MiB as written, six times that escaped). Read once per such pod,
 *   about three times that held while it is parsed (tens of milliseconds, once a run); a pod over
 *   even that (an API server whose limits were raised) is counted as undecided, named, and the
 *   run goes on: one pod never keeps every other one from being reported.
 * - requestsPerSecond 5: client-go's default client rate (rest.Config QPS 5), what every
 *   controller in the cluster is held to: 500 pods a second, 50,000 pods in 100 s.
 * - sliceMs 5: a review costs well under a millisecond (bench/RESULTS.md); 5 ms of audit work
 *   between yields adds at most that to a review that arrives during a run, a small part of the
 *   webhook's 5 s timeout and of an API server round trip.
 * - firstRunDelayMs 60 s (or the interval, if shorter): the informers sync in seconds; a minute
 *   lets a rollout's replicas settle before each lists every pod.
 */
export interface AuditPace {
  readonly pageSize: number;
  readonly maxPageBytes: number;
  readonly maxItemBytes: number;
  readonly requestsPerSecond: number;
  readonly sliceMs: number;
  readonly firstRunDelayMs: number;
}

export const auditPace: AuditPace = {
  pageSize: 100,
  maxPageBytes: 4 * 1024 * 1024,
  maxItemBytes: defaultMaxItemBytes,
  requestsPerSecond: 5,
  sliceMs: 5,
  firstRunDelayMs: 60_000,
};

export interface PeriodicAuditOptions {
  readonly intervalMs: number;
  readonly request: ApiRequest;
  readonly facts: ClusterFacts;
  /** Read at the start of each run: the policies currently serving. */
  readonly settings: () => AuditSettings;
  readonly metrics: Metrics;
  readonly logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Milliseconds since the epoch (the completion timestamp). */
  readonly now?: () => number;
  /** A monotonic clock in milliseconds (the slice budget). */
  readonly clock?: () => number;
  readonly pace?: Partial<AuditPace>;
  /** Called with each completed, published audit (`--emit-events` reports its findings as Events). */
  readonly onCompleted?: (result: AuditResult) => void;
}

export interface PeriodicAudit {
  /** One run now (tests, and the timer). */
  runOnce(): Promise<'completed' | 'failed'>;
  /**
   * Starts the timer: the first run after firstRunDelayMs, then one an interval after each. Also
   * after pause(): the replica that takes the audit Lease over starts as a replica that just began.
   */
  start(): void;
  /**
   * Another replica audits now (it holds the audit Lease, src/kube/lease-election.ts): no further
   * run is started, a run in progress publishes nothing, and this replica's audit series are
   * cleared so that only the auditing replica reports violations.
   */
  pause(): void;
  /**
   * Stops the timer and ends a run in progress: its request in flight is aborted, it publishes
   * nothing; resolves once it has unwound.
   */
  stop(): Promise<void>;
}

class Stopped extends Error {
  constructor() {
    super('the periodic audit was stopped');
  }
}

export function createPeriodicAudit(options: PeriodicAuditOptions): PeriodicAudit {
  const pace = { ...auditPace, ...options.pace };
  const now = options.now ?? Date.now;
  const clock = options.clock ?? (() => performance.now());
  const { metrics, logger } = options;
  const stopping = new AbortController();
  const { signal } = stopping;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let lastRequest = -Infinity;
  /** False between pause() and start(): a run that ends meanwhile publishes nothing. */
  let active = true;

  // Every request of a run carries the stop signal: stop() aborts the one in flight.
  const request: ApiRequest = (method, path, body, limits) => options.request(method, path, body, { ...limits, signal });
  /** Settles as `work` does, or rejects with Stopped as soon as stop() is called (for work that cannot be aborted). */
  const untilStopped = <T>(work: Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const onStop = (): void => {
        reject(new Stopped());
      };
      if (signal.aborted) onStop();
      signal.addEventListener('abort', onStop, { once: true });
      work.then(resolve, reject).finally(() => {
        signal.removeEventListener('abort', onStop);
      });
    });
  const pause = async (): Promise<void> => {
    // Until the clock says the gap is there: a timer counts from the event loop's cached time,
    // which a busy loop iteration leaves milliseconds behind, so it may fire that much early.
    for (;;) {
      if (signal.aborted) throw new Stopped();
      const wait = lastRequest + 1000 / pace.requestsPerSecond - clock();
      if (wait <= 0) break;
      await sleep(wait, undefined, { signal });
    }
    lastRequest = clock();
  };

  // A node the informers' cache lacks is read live (informers.ts): a request like a page, so it
  // waits its turn. A stored pod may name any node, existing or not, and a tenant chooses how many
  // names its pods carry; unpaced, a run would send one read per name as fast as they come back.
  // Namespaces need no pace: every pod's namespace exists, and the cache lacks only a new one.
  const pacedFacts: Pick<ClusterFacts, 'getNamespace' | 'readNode' | 'knowsNodes'> = {
    getNamespace: (name) => options.facts.getNamespace(name),
    readNode: async (name) => {
      const cached = options.facts.getNode(name);
      if (cached !== undefined) return cached;
      await pause();
      // Read by the informers' client, which takes no signal: stop() abandons it rather than wait for it.
      return untilStopped(options.facts.readNode(name));
    },
    knowsNodes: options.facts.knowsNodes,
  };

  const listOptions = {
    pageSize: pace.pageSize,
    maxPageBytes: pace.maxPageBytes,
    maxItemBytes: pace.maxItemBytes,
    maxRestarts: defaultMaxRestarts,
    pause,
  };

  /**
   * The DRA ResourceClaims, after the pods, in pages at the same pace and bounds (a claim is judged
   * as it arrives and forgotten): only while a TenancyPolicy has `spec.deviceTaint` (no other rule
   * reads a claim), and only where the API server serves resource.k8s.io/v1 (Kubernetes 1.34 and
   * later) and the role lets this replica list them. Otherwise they are skipped, and the run says
   * why in its log line: a missing API never fails the audit of everything else.
   */
  const claimSource = (settings: AuditSettings, outcome: { claims: number | string }): PodPages | undefined => {
    if (!settings.enabled.has('DedicatedNodes') || !settings.policies.policies.some((policy) => policy.deviceTaint !== undefined)) {
      outcome.claims = 'skipped: no TenancyPolicy has spec.deviceTaint';
      return undefined;
    }
    return async (handlers) => {
      await pause();
      const probe = await probeList(request, resourceClaimsPath, { maxBodyBytes: pace.maxItemBytes });
      if (!probe.listable) {
        outcome.claims =
          probe.why === 'not-served'
            ? 'skipped: the API server does not serve resource.k8s.io/v1 ResourceClaims'
            : `skipped: may not list ResourceClaims (${probe.message})`;
        if (probe.why === 'forbidden') {
          logger.warn(
            { error: probe.message },
            'ResourceClaims not audited: this replica may not list them (the audit ClusterRole grants it)',
          );
        }
        return;
      }
      let claims = 0;
      await pause();
      await listInPages(request, resourceClaimsPath, listOptions, {
        ...handlers,
        onRestart: () => {
          claims = 0;
          handlers.onRestart();
        },
        onPage: async (items) => {
          claims += items.length;
          await handlers.onPage(items);
        },
      });
      outcome.claims = claims;
    };
  };

  async function runOnce(): Promise<'completed' | 'failed'> {
    const started = clock();
    let sliceStart = clock();
    let result: AuditResult;
    const settings = options.settings();
    const outcome: { claims: number | string } = { claims: 0 };
    try {
      lastRequest = clock();
      const claimPages = claimSource(settings, outcome);
      result = await runAudit((handlers) => listInPages(request, '/api/v1/pods', listOptions, handlers), pacedFacts, settings, {
        ...(claimPages === undefined ? {} : { claimPages }),
        shouldYield: () => clock() - sliceStart >= pace.sliceMs,
        yieldNow: async () => {
          await yieldToEventLoop();
          sliceStart = clock();
        },
        keepPerNamespace: maxResultsPerReport,
      });
    } catch (error) {
      // Whatever the aborted request rejected with: a stopped run is no failure of the audit.
      if (signal.aborted) return 'failed';
      metrics.auditRuns.inc({ result: 'failed' });
      logger.error(
        { error: error instanceof Error ? error.message : String(error) },
        'audit failed; the previous audit stays published and the next interval tries again',
      );
      return 'failed';
    }
    if (signal.aborted) return 'failed';
    if (!active) {
      logger.info({}, 'audit finished after another replica took the audit lease: not published');
      return 'failed';
    }
    // Replaced as a whole, within one turn of the event loop: a scrape sees the old audit or the new one.
    metrics.auditViolations.reset();
    for (const { rule, namespace, count } of violationCounts(result)) metrics.auditViolations.set({ rule, namespace }, count);
    metrics.auditLastCompleted.set(now() / 1000);
    metrics.auditRuns.inc({ result: 'completed' });
    const violations = result.counts.reduce((sum, { count }) => sum + count, 0);
    logger.info(
      { ...result.summary, resourceClaims: outcome.claims, violations, durationMs: Math.round(clock() - started) },
      'audit completed',
    );
    for (const pod of result.undecided.slice(0, 10)) {
      logger.warn(
        { namespace: pod.namespace, [pod.kind === 'ResourceClaim' ? 'resourceClaim' : 'pod']: pod.name, error: pod.message },
        `audit could not judge a ${pod.kind === 'ResourceClaim' ? 'ResourceClaim' : 'pod'}`,
      );
    }
    await publishReports(result, settings);
    options.onCompleted?.(result);
    return 'completed';
  }

  async function publishReports(result: AuditResult, settings: AuditSettings): Promise<void> {
    try {
      const api = await discoverReportApi(request);
      if (api === undefined) return;
      const policies = new Map(settings.policies.policies.map((policy) => [policy.name, policy.enforcement]));
      const reports = buildPolicyReports(api, result, (name) => policies.get(name), new Date(now()));
      const writes = await writePolicyReports(request, api, reports, pause);
      metrics.auditReportWrites.inc({ result: 'success' }, writes.written + writes.deleted);
      if (writes.failures.length > 0) {
        metrics.auditReportWrites.inc({ result: 'failure' }, writes.failures.length);
        logger.warn({ failures: writes.failures.slice(0, 10), count: writes.failures.length }, 'some policy reports were not written');
      }
    } catch (error) {
      if (signal.aborted) return;
      metrics.auditReportWrites.inc({ result: 'failure' });
      logger.warn({ error: error instanceof Error ? error.message : String(error) }, 'policy reports not written');
    }
  }

  /** Each start() begins a new chain of runs; a run of an older chain schedules no successor. */
  let generation = 0;
  const schedule = (delayMs: number): void => {
    if (signal.aborted) return;
    const chain = generation;
    timer = setTimeout(() => {
      if (chain !== generation) return;
      if (!options.facts.isSynced()) {
        // Without synced caches every namespace and node would be read live: wait for them.
        schedule(5_000);
        return;
      }
      if (running !== undefined) {
        // A run from before a pause is still unwinding: runs never overlap.
        schedule(1_000);
        return;
      }
      running = runOnce().finally(() => {
        running = undefined;
        if (active && chain === generation) schedule(options.intervalMs);
      });
    }, delayMs);
    timer.unref();
  };

  return {
    runOnce,
    start: () => {
      active = true;
      generation += 1;
      clearTimeout(timer);
      schedule(Math.min(options.intervalMs, pace.firstRunDelayMs));
    },
    pause: () => {
      active = false;
      generation += 1;
      clearTimeout(timer);
      metrics.auditViolations.reset();
    },
    stop: async () => {
      stopping.abort(new Stopped());
      clearTimeout(timer);
      await running;
    },
  };
}

/**
 * `--audit-interval`: a Go duration of hours, minutes and seconds (`1h`, `30m`, `1h30m`, `90s`),
 * at least 1 s (runs never overlap, so a short interval only means back-to-back runs at the pace above).
 */
export function parseAuditInterval(raw: string): number {
  const match = /^(?:(\d{1,6})h)?(?:(\d{1,6})m)?(?:(\d{1,9})s)?$/.exec(raw);
  if (match === null || raw === '') throw new Error(`--audit-interval: ${JSON.stringify(raw)} is not a duration like 30m, 1h or 1h30m`);
  const [, hours, minutes, seconds] = match;
  const ms = (Number(hours ?? 0) * 3600 + Number(minutes ?? 0) * 60 + Number(seconds ?? 0)) * 1000;
  if (ms < 1000) throw new Error(`--audit-interval: ${JSON.stringify(raw)} is shorter than 1s`);
  return ms;
}
