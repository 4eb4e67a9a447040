/**
 * `tolerator serve`: its flags, read into the options of the composition root
 * (src/server/start-server.ts), and the process's life: serve until SIGTERM or SIGINT, then fail
 * /readyz for `--shutdown-delay` and drain for `--shutdown-grace`.
 */
import { pino, type Logger } from 'pino';
import { parseQuantityString } from '../api/quantity.js';
import { logFormat } from '../http/log-format.js';
import { startServer } from '../server/start-server.js';
import { exclusionFlags, readExclusion } from './audit.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { checkSettings, defaultCaValidityMs, defaultLeafValidityMs } from '../certificates/self-managed.js';
import type { SelfManagedCertificateOptions } from '../server/start-server.js';
import { parseDuration, UsageError, type FlagSpec, type ParsedFlags } from './flags.js';
import {
  admissionFlags,
  checkShutdownSeconds,
  defaultRefreshInterval,
  maxRefreshIntervalHours,
  minRefreshIntervalSeconds,
  parseRefreshInterval,
  readAdmissionSettings,
  unusedConfigurationWarnings,
} from './options.js';
import { parseAuditInterval } from '../server/periodic-audit.js';

export const logLevels = ['debug', 'info', 'warn', 'error'] as const;

export /** The audit Lease of deploy/ (the chart passes its release's namespace and name). */
const defaultAuditLease = 'tolerator-system/tolerator-audit';

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
  context: { kind: 'string', placeholder: 'NAME', help: 'the context of --kubeconfig to use (default: its current-context)' },
  'feature-gate-refresh-interval': {
    kind: 'string',
    placeholder: 'DURATION',
    help: `with a cluster: how often the gates --feature-gates does not set are re-read from the API server's /metrics and /version (default ${defaultRefreshInterval}; 0: only at start; else ${minRefreshIntervalSeconds}s to ${maxRefreshIntervalHours}h)`,
  },
  'log-level': { kind: 'string', placeholder: 'LEVEL', help: 'log level (default info)', choices: logLevels },
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
  'audit-lease': {
    kind: 'string',
    placeholder: 'NAMESPACE/NAME',
    help: `with --audit-interval: the coordination.k8s.io Lease that elects the one replica that audits (default ${defaultAuditLease}; '' for none: every replica audits)`,
  },
  'emit-events': {
    kind: 'boolean',
    help: 'write Kubernetes Events (events.k8s.io/v1, reason PolicyViolation) for denials of workload templates and of the pods and Jobs their controllers create, and for --audit-interval findings; rate-limited, needs a cluster and RBAC to create and patch events (off by default)',
  },
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
  ...exclusionFlags,
} as const satisfies Record<string, FlagSpec>;

/** Parses `--audit-lease NAMESPACE/NAME`; '' for no election. */
export function parseAuditLease(raw: string): { namespace: string; name: string } | undefined {
  if (raw === '') return undefined;
  const parts = raw.split('/');
  // Both are object names: a DNS-1123 label for the namespace, a DNS-1123 subdomain for the Lease.
  const valid =
    parts.length === 2 &&
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(parts[0] ?? '') &&
    /^[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?$/.test(parts[1] ?? '');
  if (!valid) throw new UsageError(`--audit-lease must be NAMESPACE/NAME (lower-case object names), got ${JSON.stringify(raw)}`);
  return { namespace: parts[0] ?? '', name: parts[1] ?? '' };
}

export const serveCommand: CommandDefinition = {
  name: 'serve',
  summary: 'run the admission webhook over HTTPS (what npm start runs)',
  flags: serveFlags,
  outcomes: { ok: 'stopped by SIGTERM or SIGINT after draining' },
  run: serve,
};

function createLogger(level: string | undefined): Logger {
  // Asynchronous writes: a review never waits for its log line to reach stdout. Pending lines
  // still go out before the process exits (the writes keep the event loop alive).
  return pino({ ...logFormat, level: level ?? 'info', base: { component: 'tolerator' } }, pino.destination({ dest: 1, sync: false }));
}

async function serve(flags: ParsedFlags, io: CommandIo): Promise<number> {
  const str = (name: keyof typeof serveFlags): string | undefined => flags.values.get(name) as string | undefined;
  const int = (name: keyof typeof serveFlags): bigint | undefined => flags.values.get(name) as bigint | undefined;
  if (flags.positionals.length > 0) throw new UsageError(`serve takes no arguments, got ${JSON.stringify(flags.positionals[0])}`);
  const logger = createLogger(str('log-level'));
  const settings = readAdmissionSettings(flags);
  for (const warning of unusedConfigurationWarnings(settings)) logger.warn(warning);
  const featureGateRefreshMs = parseRefreshInterval(str('feature-gate-refresh-interval'));
  const delayMs = checkShutdownSeconds('shutdown-delay', Number(int('shutdown-delay') ?? 5n)) * 1000;
  const graceMs = checkShutdownSeconds('shutdown-grace', Number(int('shutdown-grace') ?? 15n)) * 1000;
  const certFile = str('tls-cert-file');
  const keyFile = str('tls-private-key-file');
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new UsageError('--tls-cert-file and --tls-private-key-file go together');
  }
  const workers = int('review-workers');
  if (workers !== undefined && (workers < 0n || workers > 64n)) {
    throw new UsageError('--review-workers must be 0 to 64');
  }
  const memoryFlag = str('memory-limit');
  const auditInterval = str('audit-interval');
  const auditLease = str('audit-lease');
  if (auditLease !== undefined && auditInterval === undefined) throw new UsageError('--audit-lease needs --audit-interval');
  let audit:
    { intervalMs: number; exclusion: ReturnType<typeof readExclusion>; lease: { namespace: string; name: string } | undefined } | undefined;
  if (auditInterval !== undefined) {
    let intervalMs: number;
    try {
      intervalMs = parseAuditInterval(auditInterval);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    audit = { intervalMs, exclusion: readExclusion(flags), lease: parseAuditLease(auditLease ?? defaultAuditLease) };
  }
  const selfManagedCertificate = readSelfManagedCertificateFlags(str, certFile !== undefined);
  // Listened for before the server starts: a signal that comes while it starts (or the moment it
  // logs that it serves) stops it once started, with the drain, instead of killing the process.
  const shutdown = io.untilShutdown?.() ?? new Promise<string>(() => undefined);
  const server = await startServer({
    settings,
    selfManagedCertificate,
    buildInfo: io.buildInfo?.(),
    logger,
    port: Number(int('port') ?? 8443n),
    host: str('bind-address'),
    certificateFiles: certFile !== undefined && keyFile !== undefined ? { certFile, keyFile } : undefined,
    clientCaFile: str('client-ca-file'),
    kubeconfig: { path: str('kubeconfig'), context: str('context') },
    env: io.env ?? {},
    featureGateRefreshMs,
    memoryLimitBytes: memoryFlag === undefined ? undefined : parseMemoryLimit(memoryFlag),
    constrainedMemory: io.constrainedMemory?.(),
    reviewWorkers: workers === undefined ? undefined : Number(workers),
    audit,
    emitEvents: flags.values.get('emit-events') === true,
  });
  const signal = await shutdown;
  logger.info({ signal }, 'signal received');
  await server.stop({ delayMs, graceMs });
  return 0;
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
 * `--certificate-secret` and its companions, checked as flags; the certificate itself is issued
 * or read by startServer (src/kube/self-managed-certificates.ts) before it serves.
 */
function readSelfManagedCertificateFlags(
  str: (name: keyof typeof serveFlags) => string | undefined,
  hasCertificateFiles: boolean,
): SelfManagedCertificateOptions | undefined {
  const secret = str('certificate-secret');
  if (secret === undefined) {
    for (const name of ['certificate-service', 'certificate-webhooks', 'certificate-validity', 'certificate-ca-validity'] as const) {
      if (str(name) !== undefined) throw new UsageError(`--${name} needs --certificate-secret`);
    }
    return undefined;
  }
  if (hasCertificateFiles) {
    throw new UsageError(
      '--certificate-secret and --tls-cert-file exclude each other: tolerator either issues its certificate or reads it',
    );
  }
  const [namespace, name, ...extra] = secret.split('/');
  if (namespace === undefined || namespace === '' || name === undefined || name === '' || extra.length > 0) {
    throw new UsageError(`--certificate-secret must be NAMESPACE/NAME, got ${JSON.stringify(secret)}`);
  }
  const service = str('certificate-service');
  if (service === undefined || service === '') {
    throw new UsageError('--certificate-secret needs --certificate-service: the certificate must name the Service the API server calls');
  }
  const validity = str('certificate-validity');
  const caValidity = str('certificate-ca-validity');
  const settings = {
    dnsNames: [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`],
    leafValidityMs: validity === undefined ? defaultLeafValidityMs : parseDuration('certificate-validity', validity),
    caValidityMs: caValidity === undefined ? defaultCaValidityMs : parseDuration('certificate-ca-validity', caValidity),
  };
  try {
    checkSettings(settings);
  } catch (error) {
    throw new UsageError(`--certificate-validity, --certificate-ca-validity: ${(error as Error).message}`);
  }
  return { namespace, secretName: name, webhooks: str('certificate-webhooks'), settings };
}
