/**
 * Prometheus metrics, on a registry of their own (never prom-client's global one), created by the
 * composition root and passed to whatever records into them.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { FeatureGateName, FeatureGateSource } from '../api/feature-gates.js';

export interface Metrics {
  readonly registry: Registry;
  /** Reviews by webhook side, operation, acting plugin ('none' when none acted) and decision. */
  readonly reviews: Counter<'webhook' | 'operation' | 'plugin' | 'decision'>;
  readonly reviewDuration: Histogram<'webhook'>;
  /** Requests refused before any decision (unauthenticated, malformed, too large, wrong type), by HTTP status. */
  readonly rejectedRequests: Counter<'code'>;
  /** Reviews answered 500 "could not decide" (a plugin threw, a deadline passed, a worker died): the failurePolicy decided instead. */
  readonly undecidedReviews: Counter;
  /** Request body bytes received and not yet answered (src/http/body-budget.ts). */
  readonly bodyBytesInFlight: Gauge;
  /** Large reviews waiting for a review worker (src/server/review-pool.ts). */
  readonly reviewQueue: Gauge;
  readonly policyLoadErrors: Counter;
  readonly policiesLoaded: Gauge;
  readonly cacheSynced: Gauge<'resource'>;
  readonly certificateExpiry: Gauge;
  readonly certificateReloads: Counter<'result'>;
  /** Requests refused 401 under --client-ca-file, by reason (no_certificate, untrusted_certificate). */
  readonly unauthenticatedRequests: Counter<'reason'>;
  readonly clientCaReloads: Counter<'result'>;
  readonly clientCaExpiry: Gauge;
  /** Each feature gate's value (0/1), labelled with where it came from; one series per gate. */
  readonly featureGateEnabled: Gauge<'name' | 'source'>;
  /**
   * Pods breaking each audit rule, by namespace, as the last completed periodic audit found them
   * (replaced as a whole when an audit completes). Its series are bounded by the rules (9) times
   * the namespaces that have violations: namespaces are created by the platform team, not by
   * tenants, so a tenant cannot multiply them.
   */
  readonly auditViolations: Gauge<'rule' | 'namespace'>;
  readonly auditLastCompleted: Gauge;
  /** 1 while this replica holds the audit Lease (--audit-lease) and so is the one that audits; 0 otherwise. */
  readonly auditLeader: Gauge;
  /** Periodic audits by result: completed, or failed (the previous audit's metrics stay). */
  readonly auditRuns: Counter<'result'>;
  /** Policy-report writes by result (success, failure); a failure leaves the audit's metrics as they are. */
  readonly auditReportWrites: Counter<'result'>;
  /**
   * Events of `--emit-events` (src/kube/event-recorder.ts), by source (admission, audit) and
   * outcome: written, series_written, repeated (folded into a series), throttled (the object's
   * token bucket was empty), dropped (the queue was full), failed (the API server refused or could
   * not be reached).
   */
  readonly events: Counter<'source' | 'outcome'>;
  /**
   * Points gauges read at each scrape at the part they describe, once it is built (the composition
   * root builds its parts in order and each says where its gauges read): a gauge with no source
   * reads 0, or has no series.
   */
  readonly readGaugesFrom: (sources: GaugeSources) => void;
}

/** What the gauges read at every scrape. */
export interface GaugeSources {
  /** Read at every scrape: each informer cache's sync state, by resource. */
  readonly cacheSyncState?: () => Readonly<Record<string, boolean>>;
  /** Read at every scrape: each feature gate's value and source (undefined: no series). */
  readonly featureGateState?: () =>
    Readonly<Record<FeatureGateName, { readonly enabled: boolean; readonly source: FeatureGateSource }>> | undefined;
  /** Read at every scrape: the body budget's bytes held. */
  readonly bodyBytesInFlight?: () => number;
  /** Read at every scrape: reviews waiting for a worker. */
  readonly reviewQueue?: () => number;
}

export interface MetricsOptions extends GaugeSources {
  readonly collectProcessMetrics: boolean;
  /** tolerator_build_info's labels (src/build-info.ts); no series without it. */
  readonly buildInfo?: { readonly version: string; readonly revision: string; readonly nodeVersion: string };
}

export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry();
  const sources: { -readonly [Name in keyof GaugeSources]: GaugeSources[Name] } = {
    cacheSyncState: options.cacheSyncState,
    featureGateState: options.featureGateState,
    bodyBytesInFlight: options.bodyBytesInFlight,
    reviewQueue: options.reviewQueue,
  };
  if (options.collectProcessMetrics) {
    collectDefaultMetrics({ register: registry });
  }
  const metrics: Metrics = {
    registry,
    reviews: new Counter({
      name: 'tolerator_admission_reviews_total',
      help: 'Admission reviews answered, by webhook side, operation, acting plugin and decision.',
      labelNames: ['webhook', 'operation', 'plugin', 'decision'] as const,
      registers: [registry],
    }),
    reviewDuration: new Histogram({
      name: 'tolerator_admission_review_duration_seconds',
      help: 'Time from a complete request body to the response being written.',
      labelNames: ['webhook'] as const,
      // From 0.1 ms (a cached decision) up to 2.5 s, half the webhooks' 5 s timeoutSeconds: a
      // review slower than that is already an incident, and the alert on the p99 counts the
      // reviews above this bucket exactly (ToleratorSlowReviews), where a quantile computed from
      // the histogram could never exceed its highest finite bucket.
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    rejectedRequests: new Counter({
      name: 'tolerator_rejected_requests_total',
      help: 'Requests refused before any decision (unauthenticated, malformed, too large, wrong content type), by HTTP status.',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
    undecidedReviews: new Counter({
      name: 'tolerator_undecided_reviews_total',
      help: 'Reviews answered 500 because they could not be decided (a plugin threw, the deadline passed, the review worker died); the webhook failurePolicy applied. Alert on any increase.',
      registers: [registry],
    }),
    bodyBytesInFlight: new Gauge({
      name: 'tolerator_request_body_bytes_in_flight',
      help: 'Request body bytes received and not yet answered, over all connections; bodies beyond the budget are refused with 503.',
      registers: [registry],
      collect() {
        this.set(sources.bodyBytesInFlight?.() ?? 0);
      },
    }),
    reviewQueue: new Gauge({
      name: 'tolerator_review_queue_length',
      help: 'Large reviews waiting for a review worker thread.',
      registers: [registry],
      collect() {
        this.set(sources.reviewQueue?.() ?? 0);
      },
    }),
    policyLoadErrors: new Counter({
      name: 'tolerator_policy_load_errors_total',
      help: 'Tenancy policy loads that failed; the last good set keeps serving.',
      registers: [registry],
    }),
    policiesLoaded: new Gauge({
      name: 'tolerator_policies_loaded',
      help: 'Tenancy policies in the set currently serving.',
      registers: [registry],
    }),
    cacheSynced: new Gauge({
      name: 'tolerator_cache_synced',
      help: 'Whether the informer cache of a resource has synced (1) or not (0).',
      labelNames: ['resource'] as const,
      registers: [registry],
      collect() {
        for (const [resource, synced] of Object.entries(sources.cacheSyncState?.() ?? {})) {
          this.set({ resource }, synced ? 1 : 0);
        }
      },
    }),
    certificateExpiry: new Gauge({
      name: 'tolerator_certificate_expiry_timestamp_seconds',
      help: 'Expiry (notAfter) of the serving certificate, as a Unix time.',
      registers: [registry],
    }),
    certificateReloads: new Counter({
      name: 'tolerator_certificate_reloads_total',
      help: 'Serving certificate reloads, by result (success, or failure: the old pair keeps serving).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    unauthenticatedRequests: new Counter({
      name: 'tolerator_unauthenticated_requests_total',
      help: 'Requests refused 401 because --client-ca-file is set and the client presented no certificate (no_certificate) or one no CA of the file verifies (untrusted_certificate).',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    clientCaReloads: new Counter({
      name: 'tolerator_client_ca_reloads_total',
      help: 'Reloads of --client-ca-file, by result (success, or failure: the previous CAs stay trusted).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    clientCaExpiry: new Gauge({
      name: 'tolerator_client_ca_expiry_timestamp_seconds',
      help: 'Earliest expiry (notAfter) among the CAs of --client-ca-file, as a Unix time (0 when the flag is not set).',
      registers: [registry],
    }),
    featureGateEnabled: new Gauge({
      name: 'tolerator_feature_gate_enabled',
      help: "Whether a feature gate is on (1) or off (0) for the reviews now, by gate and by where the value came from: flag, cluster-metrics (the API server's /metrics), cluster-version (the default of the version /version reports) or default (built in).",
      labelNames: ['name', 'source'] as const,
      registers: [registry],
      collect() {
        const state = sources.featureGateState?.();
        if (state === undefined) return;
        // Rebuilt at every scrape, so a gate whose source changed has no stale series left.
        this.reset();
        for (const [name, gate] of Object.entries(state)) {
          this.set({ name, source: gate.source }, gate.enabled ? 1 : 0);
        }
      },
    }),
    auditViolations: new Gauge({
      name: 'tolerator_audit_violations',
      help: 'Violations found by the last completed periodic audit (--audit-interval), by rule and namespace.',
      labelNames: ['rule', 'namespace'] as const,
      registers: [registry],
    }),
    auditLastCompleted: new Gauge({
      name: 'tolerator_audit_last_completed_timestamp_seconds',
      help: 'When the last periodic audit completed, as a Unix time (0: none yet).',
      registers: [registry],
    }),
    auditLeader: new Gauge({
      name: 'tolerator_audit_leader',
      help: 'Whether this replica holds the audit Lease and so runs the periodic audit (1) or not (0).',
      registers: [registry],
    }),
    auditRuns: new Counter({
      name: 'tolerator_audit_runs_total',
      help: 'Periodic audits by result: completed, or failed (a list that failed; the previous results stay published).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    auditReportWrites: new Counter({
      name: 'tolerator_audit_report_writes_total',
      help: 'Policy-report creations, updates and deletions by the periodic audit, by result (success, failure).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    events: new Counter({
      name: 'tolerator_events_total',
      help: 'Kubernetes Events of --emit-events by source (admission, audit) and outcome (written, series_written, repeated, throttled, dropped, failed).',
      labelNames: ['source', 'outcome'] as const,
      registers: [registry],
    }),
    readGaugesFrom: (next) => {
      Object.assign(sources, next);
    },
  };
  if (options.buildInfo !== undefined) {
    // Always 1: the labels are the information, joined onto other series with `* on(instance) group_left(version)`.
    new Gauge({
      name: 'tolerator_build_info',
      help: 'The running build: version, git revision and Node.js version (always 1).',
      labelNames: ['version', 'revision', 'node_version'] as const,
      registers: [registry],
    }).set({ version: options.buildInfo.version, revision: options.buildInfo.revision, node_version: options.buildInfo.nodeVersion }, 1);
  }
  // Every reload result is exported from the start, at 0: a series that first appears at 1 has no
  // earlier sample, so increase() over it stays 0 and the first failure would never alert.
  for (const result of ['success', 'failure']) {
    metrics.certificateReloads.inc({ result }, 0);
    metrics.clientCaReloads.inc({ result }, 0);
  }
  return metrics;
}
