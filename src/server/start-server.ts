/**
 * The composition root of the webhook: `startServer(options)` builds the logger's consumers, the
 * metrics, the cluster state, the feature gate source, the policies, the review workers, the
 * pipeline and the HTTPS listener, hands them to one another, and returns the running server.
 * `tolerator serve` (src/cli/serve.ts) calls it after reading its flags; tests call it directly.
 * `createWebhookApp` is the one place the HTTP app is put together around a pipeline: the server
 * uses it, and so does the test harness that serves it without TLS (test/support/harness.ts).
 *
 * It reads no process state: the environment, the cgroup's memory limit and the signals come in
 * through `options` from src/main.ts.
 */
import { EventEmitter } from 'node:events';
import type { RequestListener } from 'node:http';
import { availableParallelism, hostname, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { emptyClusterFacts, type ClusterFacts } from '../admission/cluster-facts.js';
import { pipelineFor, type AdmissionSettings } from '../admission/pipeline-settings.js';
import type { ReviewRunner } from '../admission/run-review.js';
import type { KubernetesVersion } from '../api/feature-gate-history.js';
import type { FeatureGates } from '../api/feature-gates.js';
import type { AuditViolation, NamespaceExclusion } from '../audit/audit-rules.js';
import type { SelfManagedSettings } from '../certificates/self-managed.js';
import { createApp, type Readiness } from '../http/app.js';
import { BodyBudget } from '../http/body-budget.js';
import { readClientCaBundle, type ClientCaBundle } from '../http/client-ca.js';
import { createMetrics, type Metrics } from '../http/metrics.js';
import { generateDevelopmentCertificate, readCertificatePair, type CertificatePair } from '../http/serving-certificate.js';
import { startTlsServer, type CertificateFiles } from '../http/tls-server.js';
import { transportLimits } from '../http/transport-limits.js';
import { loadClusterStateFile } from '../kube/cluster-state-file.js';
import { auditEventFor, findingKey, type EventIntent } from '../events/event-intents.js';
import { ReportedFindings, eventLimits } from '../events/event-throttle.js';
import { createEventRecorder, eventOutcomes, eventSources, reportingInstanceFor, type EventRecorder } from '../kube/event-recorder.js';
import { startFeatureGateSource, type FeatureGateSource } from '../kube/feature-gate-source.js';
import type { PolicySet } from '../tenancy/policy-set.js';
import { DisposalStack, once } from './disposal-stack.js';
import { createPeriodicAudit } from './periodic-audit.js';
import { startReviewPool } from './review-pool.js';
import { startTenancy, type Tenancy } from './tenancy-policies.js';
import { UsageError } from './usage-error.js';

/** `serve --certificate-secret …`: tolerator issues and rotates its own serving certificate (src/kube/self-managed-certificates.ts). */
export interface SelfManagedCertificateOptions {
  readonly namespace: string;
  readonly secretName: string;
  /** The webhook configurations' name (both); else the module's default. */
  readonly webhooks: string | undefined;
  readonly settings: SelfManagedSettings;
}

export interface ServerOptions {
  readonly settings: AdmissionSettings;
  readonly logger: Logger;
  /** HTTPS port; 0 picks a free one (the returned `port` says which). */
  readonly port: number;
  readonly host?: string | undefined;
  /** The serving certificate's files, watched and reloaded; omitted, a development certificate for localhost. */
  readonly certificateFiles?: CertificateFiles | undefined;
  /** Instead of certificate files: a certificate tolerator issues into a Secret and rotates. */
  readonly selfManagedCertificate?: SelfManagedCertificateOptions | undefined;
  /** tolerator_build_info's labels. */
  readonly buildInfo?: { readonly version: string; readonly revision: string; readonly nodeVersion: string } | undefined;
  readonly clientCaFile?: string | undefined;
  /** The cluster to watch: a kubeconfig file and context, else the in-cluster service account (found through `env`). */
  readonly kubeconfig?: { readonly path?: string | undefined; readonly context?: string | undefined } | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** How often the gates `--feature-gates` leaves open are re-read from the cluster, in ms (0: only at start). */
  readonly featureGateRefreshMs: number;
  /** The memory the bounds are derived from; else the cgroup's limit (`constrainedMemory`), else the machine's. */
  readonly memoryLimitBytes?: number | undefined;
  readonly constrainedMemory?: number | undefined;
  /** Review worker threads; else derived from the memory and the CPUs. */
  readonly reviewWorkers?: number | undefined;
  /** The periodic audit, when asked for (it needs a cluster). */
  readonly audit?:
    | {
        readonly intervalMs: number;
        readonly exclusion: NamespaceExclusion;
        /** The Lease that elects the one replica that audits (src/kube/lease-election.ts); undefined: every replica audits. */
        readonly lease: { readonly namespace: string; readonly name: string } | undefined;
      }
    | undefined;
  /**
   * `--emit-events`: Kubernetes Events for the webhooks' denials of workload templates and for the
   * periodic audit's findings (src/kube/event-recorder.ts); needs a cluster.
   */
  readonly emitEvents?: boolean;
  /** Process metrics (CPU, memory, event loop) in /metrics: on for the real server, off in tests that make several. */
  readonly collectProcessMetrics?: boolean;
}

export interface RunningServer {
  readonly port: number;
  /** Resolves once /readyz would answer 200: caches synced, gates read. */
  readonly ready: () => Promise<void>;
  /**
   * Fails /readyz at once, waits `delayMs` (so endpoints drop this replica first), then closes the
   * listener, letting in-flight reviews finish within `graceMs`, and stops everything it started.
   */
  readonly stop: (drain?: { readonly delayMs: number; readonly graceMs: number }) => Promise<void>;
}

export interface WebhookAppParts {
  readonly settings: AdmissionSettings;
  readonly clusterFacts: ClusterFacts;
  readonly policies: () => PolicySet;
  readonly gates?: () => FeatureGates;
  /** The version the API server reports (PluginContext.serverVersion); absent: none known. */
  readonly serverVersion?: () => KubernetesVersion | undefined;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly readiness: Readiness;
  readonly now?: () => number;
  readonly bodyBudget?: BodyBudget;
  readonly offload?: ReviewRunner | undefined;
  readonly smallBodyBytes?: number;
  readonly recordEvent?: ((event: EventIntent) => void) | undefined;
}

/** The webhook's HTTP app around the pipeline the settings make: what the server serves, and what tests serve without TLS. */
export function createWebhookApp(parts: WebhookAppParts): RequestListener {
  return createApp({
    pipeline: pipelineFor(parts.settings, parts.clusterFacts, parts.policies, parts.gates, parts.serverVersion),
    logger: parts.logger,
    metrics: parts.metrics,
    now: parts.now ?? (() => performance.now()),
    readiness: parts.readiness,
    ...(parts.bodyBudget === undefined ? {} : { bodyBudget: parts.bodyBudget }),
    ...(parts.offload === undefined ? {} : { offload: parts.offload }),
    ...(parts.smallBodyBytes === undefined ? {} : { smallBodyBytes: parts.smallBodyBytes }),
    ...(parts.recordEvent === undefined ? {} : { recordEvent: parts.recordEvent }),
  });
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const stack = new DisposalStack();
  try {
    return await assembleServer(options, stack);
  } catch (error) {
    // A start that fails (a port in use, a certificate refused) stops what it had started: the
    // review workers, informers and timers would otherwise keep the process alive, and `serve`
    // would print the error and hang.
    await stack.dispose().catch((cleanupError: unknown) => {
      options.logger.warn({ err: cleanupError }, 'stopping what the failed start had started failed');
    });
    throw error;
  }
}

/**
 * Builds the server's parts in the order they depend on one another, each pushed onto `stack` with
 * how to stop it, so that stopping undoes them in reverse: the drain, the listener, the review
 * workers, the certificates, the audit, the policies, the cluster state, the gates.
 */
async function assembleServer(options: ServerOptions, stack: DisposalStack): Promise<RunningServer> {
  const { settings, logger } = options;
  // Read before anything starts watching, so that a bad file ends the process at once.
  const clientCa =
    options.clientCaFile === undefined ? undefined : { bundle: await readClientCaFlag(options.clientCaFile), file: options.clientCaFile };
  // Each part below, once built, points the gauges that describe it at itself.
  const metrics = createMetrics({
    collectProcessMetrics: options.collectProcessMetrics ?? true,
    ...(options.buildInfo === undefined ? {} : { buildInfo: options.buildInfo }),
  });
  const cluster = await connectToCluster(options);
  // Before the parts that record into it, so that it is stopped after them.
  const events = startEvents(options, cluster, metrics, stack);

  // The gates the flag leaves open follow the cluster when there is one (src/kube/feature-gate-source.ts).
  const gates = stack.use(
    startFeatureGateSource({
      explicit: settings.explicitGates,
      read: cluster === undefined ? undefined : () => cluster.gates.readClusterFeatureGates(cluster.kubeConfig),
      refreshIntervalMs: options.featureGateRefreshMs,
      logger,
    }),
    (source) => {
      source.stop();
    },
  );
  metrics.readGaugesFrom({ featureGateState: () => gates.resolved() });
  const clusterFacts = stack.use(startClusterFacts(cluster, settings, logger, metrics), (facts) => facts.stop());
  const tenancy = stack.use(startTenancy(settings.policiesDir, logger, metrics, true), (source) => {
    source.close();
  });
  const releaseAuditLease = await startPeriodicAudit(options, cluster, { clusterFacts, gates, tenancy, metrics, events }, stack);

  // Renewals reach the listener once it exists; none can come sooner (the first is due at 3/4 of a lifetime).
  const renewals = new EventEmitter<{ renewed: [CertificatePair] }>();
  const certificate = await servingCertificate(options, cluster, renewals, stack);

  // The memory the transport may hold (bodies, connections, review workers) follows the memory
  // the process has: the cgroup's limit when it runs in a container with one, else the machine's.
  const limits = transportLimits(
    {
      ...(options.memoryLimitBytes === undefined ? {} : { configuredMemoryBytes: options.memoryLimitBytes }),
      constrainedMemoryBytes: options.constrainedMemory,
      totalMemoryBytes: totalmem(),
      cpus: availableParallelism(),
    },
    options.reviewWorkers,
  );
  const bodyBudget = new BodyBudget({
    capacityBytes: limits.bodyBudgetBytes,
    smallReserveBytes: limits.smallReserveBytes,
    smallBodyBytes: limits.smallBodyBytes,
  });
  metrics.readGaugesFrom({ bodyBytesInFlight: () => bodyBudget.held });
  const currentGates = (): FeatureGates => gates.current();
  const serverVersion = (): KubernetesVersion | undefined => gates.serverVersion();
  const reviewPool =
    limits.reviewWorkers === 0
      ? undefined
      : stack.use(
          await startReviewPool({
            workers: limits.reviewWorkers,
            heapMib: limits.workerHeapMib,
            settings,
            clusterFacts,
            policies: tenancy.current,
            gates: currentGates,
            serverVersion,
            logger,
            now: () => performance.now(),
          }),
          (pool) => pool.close(),
        );
  metrics.readGaugesFrom({ reviewQueue: () => reviewPool?.stats().queued ?? 0 });

  // What stop() asks for: readiness fails from that moment, and the listener gives the reviews in
  // flight `graceMs` once the drain's `delayMs` is over.
  const shutdown = { requested: false, delayMs: 0, graceMs: 0 };
  const readiness = (): { ready: boolean; reasons: string[] } => {
    const reasons: string[] = [];
    if (shutdown.requested) reasons.push('shutting down');
    if (!clusterFacts.isSynced()) reasons.push('namespace and node caches have not synced');
    // Bounded: the first read of the cluster's gates gives up after its deadline.
    if (!gates.settled()) reasons.push('feature gates have not been read from the cluster yet');
    return { ready: reasons.length === 0, reasons };
  };
  const app = createWebhookApp({
    settings,
    clusterFacts,
    policies: tenancy.current,
    gates: currentGates,
    serverVersion,
    logger,
    metrics,
    bodyBudget,
    offload: reviewPool,
    smallBodyBytes: limits.smallBodyBytes,
    readiness: { check: readiness, detail: () => gates.detail() },
    recordEvent:
      events === undefined
        ? undefined
        : (event) => {
            events.record(event, 'admission');
          },
  });
  const server = stack.use(
    await startTlsServer({
      app,
      port: options.port,
      host: options.host,
      certificate,
      certificateFiles: options.certificateFiles,
      clientCa,
      logger,
      metrics,
      maxConnections: limits.maxConnections,
    }),
    (listener) => listener.close(shutdown.graceMs),
  );
  renewals.on('renewed', (pair) => {
    server.replaceCertificate(pair);
  });
  // Undone first: the drain, before the listener closes.
  stack.defer(async () => {
    logger.info({ delayMs: shutdown.delayMs, graceMs: shutdown.graceMs }, 'shutting down: readiness off, draining');
    // Given up at once, not after the drain: the next replica takes the audit over within one retry.
    void releaseAuditLease?.();
    await new Promise((resolve) => setTimeout(resolve, shutdown.delayMs));
  });
  if (clientCa !== undefined) {
    logger.info(
      { file: clientCa.file, certificates: clientCa.bundle.certificates },
      'client certificates required on every path but /healthz, /readyz and /metrics',
    );
  }
  const port = server.address().port;
  logger.info(
    {
      port,
      plugins: settings.enabled,
      featureGates: gates.current(),
      policies: tenancy.current().policies.length,
      memoryBytes: limits.memoryBytes,
      bodyBudgetBytes: limits.bodyBudgetBytes,
      maxConnections: limits.maxConnections,
      reviewWorkers: limits.reviewWorkers,
      workerHeapMib: limits.workerHeapMib,
    },
    'tolerator serving',
  );

  return {
    port,
    ready: async () => {
      // 100 ms: the caches' and the gates' state changes on events this module does not see; a
      // tenth of a second is well under the kubelet's readiness period (10 s by default).
      while (!readiness().ready && !shutdown.requested) await new Promise((resolve) => setTimeout(resolve, 100));
    },
    stop: (drain = { delayMs: 0, graceMs: 0 }) => {
      if (!shutdown.requested) Object.assign(shutdown, drain, { requested: true });
      return stack.dispose().then(() => {
        logger.info('stopped');
      });
    },
  };
}

/** The cluster to watch, when there is one: a kubeconfig, or the service account of an in-cluster pod. */
interface Cluster {
  readonly kubeConfig: KubeConfig;
  readonly informers: typeof import('../kube/informers.js');
  readonly gates: typeof import('../kube/cluster-feature-gates.js');
  readonly createApiRequest: typeof import('../kube/api-requests.js').createApiRequest;
}

/**
 * @kubernetes/client-node costs about 68 MiB of memory once imported, so it is loaded only when
 * there is a cluster to watch.
 */
async function connectToCluster(options: ServerOptions): Promise<Cluster | undefined> {
  const inCluster = (options.env.KUBERNETES_SERVICE_HOST ?? '') !== '';
  if (options.kubeconfig?.path === undefined && !inCluster) return undefined;
  const informers = await import('../kube/informers.js');
  const kubeConfig = (await import('../kube/kube-config.js')).loadKubeConfig({
    kubeconfigPath: options.kubeconfig?.path,
    context: options.kubeconfig?.context,
    env: options.env,
  });
  if (kubeConfig === undefined) return undefined;
  const gates = await import('../kube/cluster-feature-gates.js');
  const { createApiRequest } = await import('../kube/api-requests.js');
  return { kubeConfig, informers, gates, createApiRequest };
}

/** Namespaces and nodes: watched in the cluster, else read from --cluster-state, else none. */
function startClusterFacts(cluster: Cluster | undefined, settings: AdmissionSettings, logger: Logger, metrics: Metrics): ClusterFacts {
  if (cluster !== undefined) {
    const informers = cluster.informers.startInformers({ kubeConfig: cluster.kubeConfig, logger });
    metrics.readGaugesFrom({ cacheSyncState: () => informers.syncState() });
    return informers;
  }
  if (settings.clusterStateFile !== undefined) {
    return loadClusterStateFile(settings.clusterStateFile, logger);
  }
  logger.warn('no cluster: neither --kubeconfig, an in-cluster service account nor --cluster-state; namespaces and nodes are unknown');
  return emptyClusterFacts;
}

/**
 * The periodic audit, when asked for (it needs a cluster): on every replica, or on the one holding
 * the audit Lease. Returns how to give the Lease up (at once when the drain begins), if there is one.
 */
async function startPeriodicAudit(
  options: ServerOptions,
  cluster: Cluster | undefined,
  parts: { clusterFacts: ClusterFacts; gates: FeatureGateSource; tenancy: Tenancy; metrics: Metrics; events: EventRecorder | undefined },
  stack: DisposalStack,
): Promise<(() => Promise<void>) | undefined> {
  if (options.audit === undefined) return undefined;
  if (cluster === undefined) throw new UsageError('--audit-interval needs a cluster: --kubeconfig, or an in-cluster service account');
  const { settings, logger } = options;
  const { clusterFacts, gates, tenancy, metrics, events } = parts;
  const { exclusion, intervalMs, lease } = options.audit;
  const enabled = new Set(settings.enabled);
  // Each finding once while it stands, not again every interval (src/events/event-throttle.ts).
  const reported = new ReportedFindings(eventLimits.keys);
  const audit = stack.use(
    createPeriodicAudit({
      intervalMs,
      request: cluster.createApiRequest(cluster.kubeConfig),
      facts: clusterFacts,
      settings: () => ({
        gates: gates.current(),
        enabled,
        policies: tenancy.current(),
        exclusion,
        all: false,
        podNodeSelector: settings.podNodeSelector,
      }),
      metrics,
      logger,
      ...(events === undefined
        ? {}
        : {
            onCompleted: (result: { readonly violations: readonly AuditViolation[] }) => {
              reported.run(result.violations, findingKey, (violation) => {
                const event = auditEventFor(violation);
                return event !== undefined && events.record(event, 'audit');
              });
            },
          }),
    }),
    (periodic) => periodic.stop(),
  );
  if (lease === undefined) {
    audit.start();
    logger.info({ intervalMs }, "periodic audit on, on every replica (--audit-lease='')");
    return undefined;
  }
  const { createLeaseElection } = await import('../kube/lease-election.js');
  const election = createLeaseElection({
    request: cluster.createApiRequest(cluster.kubeConfig),
    ...lease,
    onStartedLeading: () => {
      metrics.auditLeader.set(1);
      audit.start();
    },
    onStoppedLeading: () => {
      metrics.auditLeader.set(0);
      audit.pause();
    },
    logger,
  });
  // The drain gives the Lease up early; stopping waits for that same release.
  const release = once(() => election.stop());
  stack.defer(release);
  election.start();
  logger.info(
    { intervalMs, lease: `${lease.namespace}/${lease.name}`, identity: election.identity },
    'periodic audit on, on the replica holding the audit lease',
  );
  return release;
}

/** The Event writer of `--emit-events`, when asked for (it needs a cluster). */
function startEvents(
  options: ServerOptions,
  cluster: Cluster | undefined,
  metrics: Metrics,
  stack: DisposalStack,
): EventRecorder | undefined {
  if (options.emitEvents !== true) return undefined;
  if (cluster === undefined) throw new UsageError('--emit-events needs a cluster: --kubeconfig, or an in-cluster service account');
  // Exported at 0 from the start, so that increase() sees the first drop or failure.
  for (const source of eventSources) for (const outcome of eventOutcomes) metrics.events.inc({ source, outcome }, 0);
  options.logger.info('Events on: denials of workload templates and audit findings are written as events.k8s.io/v1 Events');
  return stack.use(
    createEventRecorder({
      request: cluster.createApiRequest(cluster.kubeConfig),
      reportingInstance: reportingInstanceFor(hostname()),
      metrics,
      logger: options.logger,
    }),
    (recorder) => recorder.stop(),
  );
}

/** The certificate to serve: issued and rotated by tolerator (--certificate-secret), read from files, or generated for development. */
async function servingCertificate(
  options: ServerOptions,
  cluster: Cluster | undefined,
  renewals: EventEmitter<{ renewed: [CertificatePair] }>,
  stack: DisposalStack,
): Promise<CertificatePair> {
  const { logger } = options;
  const selfManagedOptions = options.selfManagedCertificate;
  if (selfManagedOptions !== undefined) {
    if (cluster === undefined) throw new UsageError('--certificate-secret needs a cluster: --kubeconfig, or an in-cluster service account');
    const { startSelfManagedCertificates } = await import('../kube/self-managed-certificates.js');
    const selfManaged = stack.use(
      await startSelfManagedCertificates({
        request: cluster.createApiRequest(cluster.kubeConfig),
        namespace: selfManagedOptions.namespace,
        secretName: selfManagedOptions.secretName,
        ...(selfManagedOptions.webhooks === undefined
          ? {}
          : { mutatingWebhook: selfManagedOptions.webhooks, validatingWebhook: selfManagedOptions.webhooks }),
        settings: selfManagedOptions.settings,
        now: () => new Date(),
        logger,
        onRenewed: (pair) => {
          renewals.emit('renewed', pair);
        },
      }),
      (certificates) => {
        certificates.stop();
      },
    );
    return selfManaged.current();
  }
  if (options.certificateFiles !== undefined) {
    return readCertificatePair(options.certificateFiles.certFile, options.certificateFiles.keyFile);
  }
  logger.warn(
    'no --tls-cert-file given: serving a generated self-signed development certificate for localhost; never use this in a cluster',
  );
  return generateDevelopmentCertificate(new Date());
}

/** A --client-ca-file that cannot be used is a flag error: the server must not start open. */
async function readClientCaFlag(file: string): Promise<ClientCaBundle> {
  try {
    return await readClientCaBundle(file);
  } catch (error) {
    throw new UsageError(`--client-ca-file ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
