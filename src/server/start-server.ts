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
import { availableParallelism, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { RequestListener } from 'node:http';
import type { Logger } from 'pino';
import { emptyClusterFacts, type ClusterFacts } from '../admission/cluster-facts.js';
import type { ResolvedGates } from '../api/feature-gate-resolution.js';
import type { KubernetesVersion } from '../api/feature-gate-history.js';
import type { FeatureGates } from '../api/feature-gates.js';
import type { NamespaceExclusion } from '../audit/audit-rules.js';
import { createPeriodicAudit, type PeriodicAudit } from './periodic-audit.js';
import type { LeaseElection } from '../kube/lease-election.js';
import { pipelineFor, type AdmissionSettings } from '../admission/pipeline-settings.js';
import { startTenancy } from './tenancy-policies.js';
import { UsageError } from './usage-error.js';
import type { ReviewRunner } from '../admission/run-review.js';
import { createApp, type Readiness } from '../http/app.js';
import type { SelfManagedSettings } from '../certificates/self-managed.js';
import { BodyBudget } from '../http/body-budget.js';
import { readClientCaBundle, type ClientCaBundle } from '../http/client-ca.js';
import { createMetrics, type Metrics } from '../http/metrics.js';
import { generateDevelopmentCertificate, readCertificatePair } from '../http/serving-certificate.js';
import { startTlsServer, type CertificateFiles } from '../http/tls-server.js';
import { transportLimits } from '../http/transport-limits.js';
import { loadClusterStateFile } from '../kube/cluster-state-file.js';
import { startFeatureGateSource } from '../kube/feature-gate-source.js';
import type { SelfManagedCertificates } from '../kube/self-managed-certificates.js';
import type { PolicySet } from '../tenancy/policy-set.js';
import { startReviewPool } from './review-pool.js';

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
  });
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { settings, logger } = options;
  // Read before anything starts watching, so that a bad file ends the process at once.
  const clientCa =
    options.clientCaFile === undefined ? undefined : { bundle: await readClientCaFlag(options.clientCaFile), file: options.clientCaFile };
  // The gauges read parts built below; until then they read nothing.
  let cacheSyncState = (): Readonly<Record<string, boolean>> => ({});
  let featureGateState = (): ResolvedGates | undefined => undefined;
  let bodyBytesInFlight = (): number => 0;
  let reviewQueue = (): number => 0;
  const metrics = createMetrics({
    collectProcessMetrics: options.collectProcessMetrics ?? true,
    cacheSyncState: () => cacheSyncState(),
    featureGateState: () => featureGateState(),
    bodyBytesInFlight: () => bodyBytesInFlight(),
    reviewQueue: () => reviewQueue(),
    ...(options.buildInfo === undefined ? {} : { buildInfo: options.buildInfo }),
  });

  // @kubernetes/client-node costs about 68 MiB of memory once imported, so it is loaded only when
  // there is a cluster to watch (a kubeconfig, or the service account of an in-cluster pod).
  const kubeconfigPath = options.kubeconfig?.path;
  const inCluster = (options.env.KUBERNETES_SERVICE_HOST ?? '') !== '';
  const kube = kubeconfigPath !== undefined || inCluster ? await import('../kube/informers.js') : undefined;
  const kubeConfig =
    kube === undefined
      ? undefined
      : (await import('../kube/kube-config.js')).loadKubeConfig({
          kubeconfigPath,
          context: options.kubeconfig?.context,
          env: options.env,
        });
  // The gates the flag leaves open follow the cluster when there is one (src/kube/feature-gate-source.ts).
  const clusterGates = kubeConfig === undefined ? undefined : await import('../kube/cluster-feature-gates.js');
  const gates = startFeatureGateSource({
    explicit: settings.explicitGates,
    read: clusterGates === undefined || kubeConfig === undefined ? undefined : () => clusterGates.readClusterFeatureGates(kubeConfig),
    refreshIntervalMs: options.featureGateRefreshMs,
    logger,
  });
  featureGateState = () => gates.resolved();
  let clusterFacts: ClusterFacts;
  if (kube !== undefined && kubeConfig !== undefined) {
    const informers = kube.startInformers({ kubeConfig, logger });
    clusterFacts = informers;
    cacheSyncState = () => informers.syncState();
  } else if (settings.clusterStateFile !== undefined) {
    clusterFacts = loadClusterStateFile(settings.clusterStateFile, logger);
  } else {
    logger.warn('no cluster: neither --kubeconfig, an in-cluster service account nor --cluster-state; namespaces and nodes are unknown');
    clusterFacts = emptyClusterFacts;
  }
  const tenancy = startTenancy(settings.policiesDir, logger, metrics, true);

  let periodicAudit: PeriodicAudit | undefined;
  let auditLease: LeaseElection | undefined;
  if (options.audit !== undefined) {
    if (kubeConfig === undefined) throw new UsageError('--audit-interval needs a cluster: --kubeconfig, or an in-cluster service account');
    const { exclusion, intervalMs, lease } = options.audit;
    const enabled = new Set(settings.enabled);
    const { createApiRequest } = await import('../kube/api-requests.js');
    periodicAudit = createPeriodicAudit({
      intervalMs,
      request: createApiRequest(kubeConfig),
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
    });
    if (lease === undefined) {
      periodicAudit.start();
      logger.info({ intervalMs }, "periodic audit on, on every replica (--audit-lease='')");
    } else {
      const { createLeaseElection } = await import('../kube/lease-election.js');
      const audit = periodicAudit;
      auditLease = createLeaseElection({
        request: createApiRequest(kubeConfig),
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
      auditLease.start();
      logger.info(
        { intervalMs, lease: `${lease.namespace}/${lease.name}`, identity: auditLease.identity },
        'periodic audit on, on the replica holding the audit lease',
      );
    }
  }

  const certificateFiles = options.certificateFiles;
  // Set once the server exists; a renewal cannot come sooner (the first is due at 3/4 of a lifetime).
  let onRenewed: (pair: { cert: string; key: string }) => void = () => undefined;
  const selfManagedOptions = options.selfManagedCertificate;
  let selfManaged: SelfManagedCertificates | undefined;
  if (selfManagedOptions !== undefined) {
    if (kubeConfig === undefined)
      throw new UsageError('--certificate-secret needs a cluster: --kubeconfig, or an in-cluster service account');
    const { createApiRequest } = await import('../kube/api-requests.js');
    const { startSelfManagedCertificates } = await import('../kube/self-managed-certificates.js');
    selfManaged = await startSelfManagedCertificates({
      request: createApiRequest(kubeConfig),
      namespace: selfManagedOptions.namespace,
      secretName: selfManagedOptions.secretName,
      ...(selfManagedOptions.webhooks === undefined
        ? {}
        : { mutatingWebhook: selfManagedOptions.webhooks, validatingWebhook: selfManagedOptions.webhooks }),
      settings: selfManagedOptions.settings,
      now: () => new Date(),
      logger,
      onRenewed: (pair) => {
        onRenewed(pair);
      },
    });
  }
  const certificate =
    selfManaged !== undefined
      ? selfManaged.current()
      : certificateFiles === undefined
        ? await generateDevelopmentCertificate(new Date())
        : await readCertificatePair(certificateFiles.certFile, certificateFiles.keyFile);
  if (certificateFiles === undefined && selfManaged === undefined) {
    logger.warn(
      'no --tls-cert-file given: serving a generated self-signed development certificate for localhost; never use this in a cluster',
    );
  }

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
  bodyBytesInFlight = () => bodyBudget.held;
  const currentGates = (): FeatureGates => gates.current();
  const serverVersion = (): KubernetesVersion | undefined => gates.serverVersion();
  const reviewPool =
    limits.reviewWorkers === 0
      ? undefined
      : await startReviewPool({
          workers: limits.reviewWorkers,
          heapMib: limits.workerHeapMib,
          settings,
          clusterFacts,
          policies: tenancy.current,
          gates: currentGates,
          serverVersion,
          logger,
          now: () => performance.now(),
        });
  reviewQueue = () => reviewPool?.stats().queued ?? 0;

  let shuttingDown = false;
  const readiness = (): { ready: boolean; reasons: string[] } => {
    const reasons: string[] = [];
    if (shuttingDown) reasons.push('shutting down');
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
  });
  const server = await startTlsServer({
    app,
    port: options.port,
    host: options.host,
    certificate,
    certificateFiles,
    clientCa,
    logger,
    metrics,
    maxConnections: limits.maxConnections,
  });
  onRenewed = (pair) => {
    server.replaceCertificate(pair);
  };
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

  let stopped: Promise<void> | undefined;
  return {
    port,
    ready: async () => {
      // 100 ms: the caches' and the gates' state changes on events this module does not see; a
      // tenth of a second is well under the kubelet's readiness period (10 s by default).
      while (!readiness().ready && !shuttingDown) await new Promise((resolve) => setTimeout(resolve, 100));
    },
    stop: (drain = { delayMs: 0, graceMs: 0 }) => {
      stopped ??= (async () => {
        shuttingDown = true;
        logger.info(drain, 'shutting down: readiness off, draining');
        // Given up at once, not after the drain: the next replica takes the audit over within one retry.
        const released = auditLease?.stop();
        await new Promise((resolve) => setTimeout(resolve, drain.delayMs));
        selfManaged?.stop();
        await server.close(drain.graceMs);
        await reviewPool?.close();
        await released;
        await periodicAudit?.stop();
        tenancy.close();
        gates.stop();
        await clusterFacts.stop();
        logger.info('stopped');
      })();
      return stopped;
    },
  };
}

/** A --client-ca-file that cannot be used is a flag error: the server must not start open. */
async function readClientCaFlag(file: string): Promise<ClientCaBundle> {
  try {
    return await readClientCaBundle(file);
  } catch (error) {
    throw new UsageError(`--client-ca-file ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
