#!/usr/bin/env node
/**
 * The entry point: it dispatches each command and is the only module that reads process state.
 * `serve` is composed here: flags become configuration, and the logger, metrics, cluster state,
 * feature gate source, policies, pipeline and server are built and handed to one another (the policies and pipeline
 * through src/cli/runtime.ts). The other commands get the process's I/O as a CommandIo and build
 * their pipeline through src/cli/runtime.ts too. No other module creates a singleton.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { pino, type Logger } from 'pino';
import type { ResolvedGates } from './api/feature-gate-resolution.js';
import type { FeatureGates } from './api/feature-gates.js';
import { emptyClusterFacts, type ClusterFacts } from './admission/cluster-facts.js';
import { AdmissionError } from './admission/errors.js';
import { parseQuantityString } from './api/quantity.js';
import { parseDuration, parseFlags, usage, UsageError, type FlagSpec } from './cli/flags.js';
import { checkSettings, defaultCaValidityMs, defaultLeafValidityMs } from './certificates/self-managed.js';
import {
  admissionFlags,
  checkShutdownSeconds,
  defaultRefreshInterval,
  minRefreshIntervalSeconds,
  maxRefreshIntervalHours,
  parseRefreshInterval,
  readAdmissionSettings,
  unusedConfigurationWarnings,
} from './cli/options.js';
import type { Command, CommandIo } from './cli/command.js';
import { auditCommand, exclusionFlags, readExclusion } from './cli/audit.js';
import { deleteWebhooksCommand } from './cli/delete-webhooks.js';
import { createPeriodicAudit, parseAuditInterval, type PeriodicAudit } from './cli/periodic-audit.js';
import { explainCommand } from './cli/explain.js';
import { reviewCommand } from './cli/review.js';
import { testCommand } from './cli/policy-test.js';
import { simulateCommand } from './cli/simulate.js';
import { formatVersion, readBuildInfo } from './build-info.js';
import { createApp } from './http/app.js';
import { readClientCaBundle, type ClientCaBundle } from './http/client-ca.js';
import { createMetrics } from './http/metrics.js';
import { generateDevelopmentCertificate, readCertificatePair } from './http/serving-certificate.js';
import { BodyBudget } from './http/body-budget.js';
import { startTlsServer } from './http/tls-server.js';
import { transportLimits } from './http/transport-limits.js';
import { startReviewPool } from './server/review-pool.js';
import { loadClusterStateFile } from './kube/cluster-state-file.js';
import { pipelineFor, startTenancy } from './cli/runtime.js';
import { startFeatureGateSource } from './kube/feature-gate-source.js';

const serveFlags = {
  ...admissionFlags,
  port: { kind: 'int', placeholder: 'PORT', help: 'HTTPS port (default 8443)' },
  'bind-address': { kind: 'string', placeholder: 'ADDRESS', help: 'address to listen on (default: all interfaces)' },
  'tls-cert-file': {
    kind: 'string',
    placeholder: 'FILE',
    help: 'serving certificate (PEM); watched and reloaded. Omitted: a development certificate for localhost',
  },
  'tls-private-key-file': { kind: 'string', placeholder: 'FILE', help: 'private key of the serving certificate (PEM)' },
  'certificate-secret': {
    kind: 'string',
    placeholder: 'NAMESPACE/NAME',
    help: 'issue and rotate the serving certificate itself (no cert-manager): a CA and a leaf kept in this existing Secret; needs a cluster and --certificate-service',
  },
  'certificate-service': {
    kind: 'string',
    placeholder: 'NAME',
    help: "with --certificate-secret: the Service in the Secret's namespace the API server calls; the certificate names NAME.NAMESPACE.svc and NAME.NAMESPACE.svc.cluster.local",
  },
  'certificate-webhooks': {
    kind: 'string',
    placeholder: 'NAME',
    help: 'with --certificate-secret: the MutatingWebhookConfiguration and ValidatingWebhookConfiguration NAME whose caBundle tolerator writes',
  },
  'certificate-validity': {
    kind: 'string',
    placeholder: 'DURATION',
    help: 'with --certificate-secret: lifetime of the serving certificate, renewed at three quarters of it (default 8760h)',
  },
  'certificate-ca-validity': {
    kind: 'string',
    placeholder: 'DURATION',
    help: 'with --certificate-secret: lifetime of the CA, at least twice the certificate’s (default 87600h)',
  },
  'client-ca-file': {
    kind: 'string',
    placeholder: 'FILE',
    help: 'CA bundle (PEM); when set, every path but /healthz, /readyz and /metrics needs a client certificate one of its CAs signed (401 otherwise); watched and reloaded',
  },
  kubeconfig: {
    kind: 'string',
    placeholder: 'FILE',
    help: 'kubeconfig to watch Namespaces and Nodes with (else in-cluster config, else --cluster-state)',
  },
  'feature-gate-refresh-interval': {
    kind: 'string',
    placeholder: 'DURATION',
    help: `with a cluster: how often the gates --feature-gates does not set are re-read from the API server's /metrics and /version (default ${defaultRefreshInterval}; 0: only at start; else ${minRefreshIntervalSeconds}s to ${maxRefreshIntervalHours}h)`,
  },
  'log-level': { kind: 'string', placeholder: 'LEVEL', help: 'debug, info, warn or error (default info)' },
  'shutdown-delay': {
    kind: 'int',
    placeholder: 'SECONDS',
    help: 'after SIGTERM, how long /readyz fails before the listener closes, so endpoints drop this replica first (default 5)',
  },
  'shutdown-grace': { kind: 'int', placeholder: 'SECONDS', help: 'how long in-flight reviews may take to finish after that (default 15)' },
  'memory-limit': {
    kind: 'string',
    placeholder: 'QUANTITY',
    help: 'the memory the bounds on request bodies in flight, connections and review workers are derived from, e.g. 512Mi (default: the container’s memory limit, else the machine’s memory)',
  },
  'review-workers': {
    kind: 'int',
    placeholder: 'N',
    help: 'worker threads that decide reviews of more than 64 KiB, so they never hold up the others (default: from the memory limit and CPUs, at least 1; 0: every review on the main thread)',
  },
  'audit-interval': {
    kind: 'string',
    placeholder: 'DURATION',
    help: 'audit every pod of the cluster this often (30m, 1h, …): metrics and policy reports; off by default, needs a cluster',
  },
  ...exclusionFlags,
  help: { kind: 'boolean', help: 'show this help' },
} as const satisfies Record<string, FlagSpec>;

let inputLog: Logger | undefined;

/** What the offline commands read and write, passed in so they stay testable. */
const commandIo: CommandIo = {
  stdout: (text) => {
    process.stdout.write(text);
  },
  stderr: (text) => {
    process.stderr.write(text);
  },
  readFile: (path) => readFileSync(path, 'utf8'),
  readBytes: (path) => readFileSync(path),
  readStdin: () => readFileSync(0),
  // Warnings only, and to stderr: an offline command's output is what it writes to stdout.
  log: () => (inputLog ??= pino({ level: 'warn' }, pino.destination(2))),
  env: process.env,
};

/** Every command but serve, which composes the server and so stays in this file. A Map, so that no inherited property is a command. */
const offlineCommands: ReadonlyMap<string, Command> = new Map([
  ['review', reviewCommand],
  ['explain', explainCommand],
  ['simulate', simulateCommand],
  ['test', testCommand],
  ['audit', auditCommand],
  ['delete-webhooks', deleteWebhooksCommand],
]);

const commands = `Usage: tolerator <command> [flags]

Commands:
  serve     run the admission webhook over HTTPS (what npm start runs)
  review    read an AdmissionReview (file or -) and print the response, as the server would answer
  explain   for pod or workload manifests and the cluster state, which group applies and every change, with its reason
  simulate  on which nodes pods may schedule, are avoided, or get evicted (--nodes FILE MANIFEST... [-o json])
  test      run a directory of *.test.yaml admission cases, as a CI step; non-zero exit on failure
  audit     every existing pod that breaks a rule, from the cluster or --cluster-state FILE (table or -o json); exit 1 when any does
  delete-webhooks  delete the webhook configurations NAME (the Helm chart's pre-delete hook)
  version   the version, git revision and Node.js version (also --version)
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  const offline = command === undefined ? undefined : offlineCommands.get(command);
  if (offline !== undefined) {
    return offline(rest, commandIo);
  }
  switch (command) {
    case 'serve':
      return serve(rest);
    case '--version':
    case 'version':
      process.stdout.write(formatVersion(readBuildInfo(process.env)));
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(commands);
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`tolerator: unknown command ${JSON.stringify(command)}\n\n${commands}`);
      return 2;
  }
}

function createLogger(level: string | undefined): Logger {
  const levels = ['debug', 'info', 'warn', 'error'];
  if (level !== undefined && !levels.includes(level)) {
    throw new UsageError(`--log-level must be one of ${levels.join(', ')}`);
  }
  // Asynchronous writes: a review never waits for its log line to reach stdout. Pending lines
  // still go out before the process exits (the writes keep the event loop alive).
  return pino({ level: level ?? 'info', base: { component: 'tolerator' } }, pino.destination({ dest: 1, sync: false }));
}

async function serve(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, serveFlags);
  if (flags.values.get('help') === true) {
    process.stdout.write(`Usage: tolerator serve [flags]\n\n${usage(serveFlags)}\n`);
    return 0;
  }
  const str = (name: keyof typeof serveFlags): string | undefined => flags.values.get(name) as string | undefined;
  const int = (name: keyof typeof serveFlags, fallback: number): number =>
    Number((flags.values.get(name) as bigint | undefined) ?? fallback);
  const logger = createLogger(str('log-level'));
  const settings = readAdmissionSettings(flags);
  for (const warning of unusedConfigurationWarnings(settings)) logger.warn(warning);
  const refreshIntervalMs = parseRefreshInterval(str('feature-gate-refresh-interval'));
  const delayMs = checkShutdownSeconds('shutdown-delay', int('shutdown-delay', 5)) * 1000;
  const graceMs = checkShutdownSeconds('shutdown-grace', int('shutdown-grace', 15)) * 1000;
  // Read before anything starts watching, so that a bad file ends the process at once.
  const clientCaFile = str('client-ca-file');
  const clientCa = clientCaFile === undefined ? undefined : { bundle: await readClientCaFlag(clientCaFile), file: clientCaFile };
  let cacheSyncState = (): Readonly<Record<string, boolean>> => ({});
  let featureGateState = (): ResolvedGates | undefined => undefined;
  let bodyBytesInFlight = (): number => 0;
  let reviewQueue = (): number => 0;
  const metrics = createMetrics({
    collectProcessMetrics: true,
    cacheSyncState: () => cacheSyncState(),
    featureGateState: () => featureGateState(),
    bodyBytesInFlight: () => bodyBytesInFlight(),
    reviewQueue: () => reviewQueue(),
    buildInfo: readBuildInfo(process.env),
  });

  // @kubernetes/client-node costs about 68 MiB of memory once imported, so it is loaded only when
  // there is a cluster to watch (a kubeconfig, or the service account of an in-cluster pod).
  const kubeconfigPath = str('kubeconfig');
  const inCluster = (process.env.KUBERNETES_SERVICE_HOST ?? '') !== '';
  const kube = kubeconfigPath !== undefined || inCluster ? await import('./kube/informers.js') : undefined;
  const kubeConfig =
    kube === undefined ? undefined : (await import('./kube/kube-config.js')).loadKubeConfig({ kubeconfigPath, env: process.env });
  // The gates the flag leaves open follow the cluster when there is one (src/kube/feature-gate-source.ts).
  const clusterGates = kubeConfig === undefined ? undefined : await import('./kube/cluster-feature-gates.js');
  const gates = startFeatureGateSource({
    explicit: settings.explicitGates,
    read: clusterGates === undefined || kubeConfig === undefined ? undefined : () => clusterGates.readClusterFeatureGates(kubeConfig),
    refreshIntervalMs,
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

  const auditInterval = str('audit-interval');
  let periodicAudit: PeriodicAudit | undefined;
  if (auditInterval !== undefined) {
    let intervalMs: number;
    try {
      intervalMs = parseAuditInterval(auditInterval);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    if (kubeConfig === undefined) throw new UsageError('--audit-interval needs a cluster: --kubeconfig, or an in-cluster service account');
    const exclusion = readExclusion(flags);
    const enabled = new Set(settings.enabled);
    const { createApiRequest } = await import('./kube/api-requests.js');
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
    periodicAudit.start();
    logger.info({ intervalMs }, 'periodic audit on');
  }

  const certFile = str('tls-cert-file');
  const keyFile = str('tls-private-key-file');
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new UsageError('--tls-cert-file and --tls-private-key-file go together');
  }
  const certificateFiles = certFile !== undefined && keyFile !== undefined ? { certFile, keyFile } : undefined;
  const certificateSecret = str('certificate-secret');
  if (certificateSecret !== undefined && certificateFiles !== undefined) {
    throw new UsageError(
      '--certificate-secret and --tls-cert-file exclude each other: tolerator either issues its certificate or reads it',
    );
  }
  // Set once the server exists; a renewal cannot come sooner (the first is due at 3/4 of a lifetime).
  let onRenewed: (pair: { cert: string; key: string }) => void = () => undefined;
  const selfManaged =
    certificateSecret === undefined
      ? undefined
      : await startSelfManagedCertificateFlags({
          secret: certificateSecret,
          service: str('certificate-service'),
          webhooks: str('certificate-webhooks'),
          validity: str('certificate-validity'),
          caValidity: str('certificate-ca-validity'),
          kubeConfig,
          logger,
          onRenewed: (pair) => {
            onRenewed(pair);
          },
        });
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
  const workersFlag = flags.values.get('review-workers') as bigint | undefined;
  if (workersFlag !== undefined && (workersFlag < 0n || workersFlag > 64n)) {
    throw new UsageError('--review-workers must be 0 to 64');
  }
  const memoryFlag = str('memory-limit');
  const limits = transportLimits(
    {
      ...(memoryFlag === undefined ? {} : { configuredMemoryBytes: parseMemoryLimit(memoryFlag) }),
      constrainedMemoryBytes: process.constrainedMemory(),
      totalMemoryBytes: totalmem(),
      cpus: availableParallelism(),
    },
    workersFlag === undefined ? undefined : Number(workersFlag),
  );
  const bodyBudget = new BodyBudget({
    capacityBytes: limits.bodyBudgetBytes,
    smallReserveBytes: limits.smallReserveBytes,
    smallBodyBytes: limits.smallBodyBytes,
  });
  bodyBytesInFlight = () => bodyBudget.held;
  const currentGates = (): FeatureGates => gates.current();
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
          logger,
          now: () => performance.now(),
        });
  reviewQueue = () => reviewPool?.stats().queued ?? 0;

  let shuttingDown = false;
  const app = createApp({
    pipeline: pipelineFor(settings, clusterFacts, tenancy.current, currentGates),
    logger,
    metrics,
    now: () => performance.now(),
    bodyBudget,
    ...(reviewPool === undefined ? {} : { offload: reviewPool }),
    smallBodyBytes: limits.smallBodyBytes,
    readiness: {
      check: () => {
        const reasons: string[] = [];
        if (shuttingDown) reasons.push('shutting down');
        if (!clusterFacts.isSynced()) reasons.push('namespace and node caches have not synced');
        // Bounded: the first read of the cluster's gates gives up after its deadline.
        if (!gates.settled()) reasons.push('feature gates have not been read from the cluster yet');
        return { ready: reasons.length === 0, reasons };
      },
      detail: () => gates.detail(),
    },
  });
  const port = int('port', 8443);
  const server = await startTlsServer({
    app,
    port,
    host: str('bind-address'),
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
  logger.info(
    {
      port: server.address().port,
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

  return new Promise<number>((resolve) => {
    const shutdown = (signal: string): void => {
      if (shuttingDown) return;
      shuttingDown = true;
      logger.info({ signal, delayMs, graceMs }, 'shutting down: readiness off, draining');
      setTimeout(() => {
        void server.close(graceMs).then(async () => {
          await reviewPool?.close();
          await periodicAudit?.stop();
          selfManaged?.stop();
          tenancy.close();
          gates.stop();
          await clusterFacts.stop();
          logger.info('stopped');
          resolve(0);
        });
      }, delayMs);
    };
    process.once('SIGTERM', () => {
      shutdown('SIGTERM');
    });
    process.once('SIGINT', () => {
      shutdown('SIGINT');
    });
  });
}

/**
 * `--memory-limit`: a resource.Quantity, as a container's memory limit is written (512Mi), in
 * bytes; at least 64 MiB (less could not hold the largest review's body) and at most 2^53 bytes
 * (the largest integer a double holds exactly).
 */
function parseMemoryLimit(text: string): number {
  const quantity = parseQuantityString(text);
  const bytes = quantity === undefined ? Number.NaN : Number(quantity.coefficient) * 10 ** quantity.exponent;
  if (!Number.isFinite(bytes) || bytes < 64 * 1024 * 1024 || bytes > Number.MAX_SAFE_INTEGER) {
    throw new UsageError(`--memory-limit must be a quantity from 64Mi to 8Pi, got ${JSON.stringify(text)}`);
  }
  return Math.floor(bytes);
}

/**
 * `--certificate-secret` and its companions, checked as flags, then the first certificate issued
 * or read (src/kube/self-managed-certificates.ts) before the server starts with it.
 */
async function startSelfManagedCertificateFlags(flags: {
  secret: string;
  service: string | undefined;
  webhooks: string | undefined;
  validity: string | undefined;
  caValidity: string | undefined;
  kubeConfig: import('@kubernetes/client-node').KubeConfig | undefined;
  logger: Logger;
  onRenewed: (pair: { cert: string; key: string }) => void;
}): Promise<import('./kube/self-managed-certificates.js').SelfManagedCertificates> {
  const [namespace, name, ...extra] = flags.secret.split('/');
  if (namespace === undefined || namespace === '' || name === undefined || name === '' || extra.length > 0) {
    throw new UsageError(`--certificate-secret must be NAMESPACE/NAME, got ${JSON.stringify(flags.secret)}`);
  }
  if (flags.service === undefined || flags.service === '') {
    throw new UsageError('--certificate-secret needs --certificate-service: the certificate must name the Service the API server calls');
  }
  if (flags.kubeConfig === undefined) {
    throw new UsageError('--certificate-secret needs a cluster: --kubeconfig, or an in-cluster service account');
  }
  const settings = {
    dnsNames: [`${flags.service}.${namespace}.svc`, `${flags.service}.${namespace}.svc.cluster.local`],
    leafValidityMs: flags.validity === undefined ? defaultLeafValidityMs : parseDuration('certificate-validity', flags.validity),
    caValidityMs: flags.caValidity === undefined ? defaultCaValidityMs : parseDuration('certificate-ca-validity', flags.caValidity),
  };
  try {
    checkSettings(settings);
  } catch (error) {
    throw new UsageError(`--certificate-validity, --certificate-ca-validity: ${(error as Error).message}`);
  }
  const { createApiRequest } = await import('./kube/api-requests.js');
  const { startSelfManagedCertificates } = await import('./kube/self-managed-certificates.js');
  return startSelfManagedCertificates({
    request: createApiRequest(flags.kubeConfig),
    namespace,
    secretName: name,
    ...(flags.webhooks === undefined ? {} : { mutatingWebhook: flags.webhooks, validatingWebhook: flags.webhooks }),
    settings,
    now: () => new Date(),
    logger: flags.logger,
    onRenewed: flags.onRenewed,
  });
}

/** A --client-ca-file that cannot be used is a flag error: the server must not start open. */
async function readClientCaFlag(file: string): Promise<ClientCaBundle> {
  try {
    return await readClientCaBundle(file);
  } catch (error) {
    throw new UsageError(`--client-ca-file ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

// A reader that stops early (`tolerator explain … | head`) is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') {
    process.exit(0);
  }
  throw error;
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof AdmissionError) {
      process.stderr.write(`tolerator: ${error.message}\n`);
      process.exitCode = 2;
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`tolerator: ${message}\n`);
    process.exitCode = 1;
  },
);
