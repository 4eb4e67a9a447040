/**
 * Reads what the API server says about its feature gates: `GET /metrics`
 * (`kubernetes_feature_enabled`) and `GET /version`, two non-resource URLs, with the kube
 * client's own TLS settings and credentials (KubeConfig.applyToHTTPSOptions, which client-node's
 * Watch goes through too: the cluster CA, client certificates, bearer or exec tokens, proxies).
 * The ClusterRole grants `get` on both (deploy/base/rbac.yaml).
 *
 * Every read is bounded: a deadline for the whole exchange, a cap on the bytes read, and the
 * metrics body scanned as it streams (src/api/feature-gate-metrics.ts), one line held at a time.
 * A read never throws: each part that could not be read is undefined in the report, with why.
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { FeatureEnabledScanner, featureEnabledMetric } from '../api/feature-gate-metrics.js';
import { parseKubernetesVersion } from '../api/feature-gate-history.js';
import type { ClusterGateReading } from '../api/feature-gate-resolution.js';
import type { FeatureGateName } from '../api/feature-gates.js';

export interface ClusterGateReport extends ClusterGateReading {
  /** The stage label of each gate `/metrics` reported (for the log). */
  readonly stages: ReadonlyMap<FeatureGateName, string>;
  /** Why `/metrics` gave nothing usable, or which gates it lacked. */
  readonly metricsProblem?: string;
  /** `gitVersion` as `/version` reported it. */
  readonly gitVersion?: string;
  /** Why `/version` gave no version. */
  readonly versionProblem?: string;
}

export interface ClusterGateReadLimits {
  /** Deadline of each GET, from the request to the last byte read. */
  readonly timeoutMs: number;
  /** The most bytes of `/metrics` read before giving up on it. */
  readonly maxMetricsBytes: number;
}

/**
 * - timeoutMs 10 s: a healthy API server renders and sends its /metrics in well under a second
 *   (an estimate: the body is a few MB in a usual cluster, produced from memory); ten times that is
 *   a control plane in trouble, where the last known value is the better bet. Both GETs run at
 *   once, so one read of the cluster takes at most 10 s, which also bounds how long a starting
 *   replica's /readyz waits for its first read.
 * - maxMetricsBytes 64 MiB: the feature family comes after every `apiserver_*` and `etcd_*`
 *   family (families are sorted by name), which make up most of the body: a few MB in a usual
 *   cluster, tens of MB with hundreds of CRDs (the request-duration histograms hold a series per
 *   resource, verb and bucket). Reading stops at the end of the feature family, and the scanner
 *   holds one line, so the cap bounds transfer time and the API server's egress, not memory.
 */
export const defaultClusterGateReadLimits: ClusterGateReadLimits = { timeoutMs: 10_000, maxMetricsBytes: 64 * 1024 * 1024 };

/** `/version` is a few hundred bytes (version.Info); 64 KiB is far beyond any real answer. */
const maxVersionBytes = 64 * 1024;

export async function readClusterFeatureGates(
  kubeConfig: KubeConfig,
  limits: ClusterGateReadLimits = defaultClusterGateReadLimits,
): Promise<ClusterGateReport> {
  const [metrics, version] = await Promise.all([readMetrics(kubeConfig, limits), readVersion(kubeConfig, limits)]);
  return { ...metrics, ...version };
}

async function readMetrics(
  kubeConfig: KubeConfig,
  limits: ClusterGateReadLimits,
): Promise<Pick<ClusterGateReport, 'metrics' | 'stages' | 'metricsProblem'>> {
  const scanner = new FeatureEnabledScanner();
  try {
    const { status } = await getNonResource(kubeConfig, '/metrics', {
      timeoutMs: limits.timeoutMs,
      maxBytes: limits.maxMetricsBytes,
      // The text format: the API server would otherwise be free to pick protobuf or OpenMetrics.
      accept: 'text/plain;version=0.0.4',
      onChunk: (chunk) => scanner.push(chunk),
    });
    if (status !== 200) {
      return { metrics: undefined, stages: new Map(), metricsProblem: `GET /metrics: ${describeStatus(status)}` };
    }
  } catch (error) {
    return { metrics: undefined, stages: new Map(), metricsProblem: `GET /metrics: ${messageOf(error)}` };
  }
  const scan = scanner.end();
  const metrics = new Map<FeatureGateName, boolean>();
  const stages = new Map<FeatureGateName, string>();
  for (const [name, sample] of scan.samples) {
    metrics.set(name, sample.enabled);
    stages.set(name, sample.stage);
  }
  const problems: string[] = [];
  if (!scan.familySeen) problems.push(`GET /metrics: no ${featureEnabledMetric} samples`);
  if (scan.malformedLines > 0) problems.push(`GET /metrics: ${scan.malformedLines} ${featureEnabledMetric} line(s) not understood`);
  return { metrics, stages, ...(problems.length > 0 ? { metricsProblem: problems.join('; ') } : {}) };
}

async function readVersion(
  kubeConfig: KubeConfig,
  limits: ClusterGateReadLimits,
): Promise<Pick<ClusterGateReport, 'version' | 'gitVersion' | 'versionProblem'>> {
  const chunks: Buffer[] = [];
  try {
    const { status } = await getNonResource(kubeConfig, '/version', {
      timeoutMs: limits.timeoutMs,
      maxBytes: maxVersionBytes,
      accept: 'application/json',
      onChunk: (chunk) => {
        chunks.push(chunk);
        return false;
      },
    });
    if (status !== 200) return { version: undefined, versionProblem: `GET /version: ${describeStatus(status)}` };
  } catch (error) {
    return { version: undefined, versionProblem: `GET /version: ${messageOf(error)}` };
  }
  let info: unknown;
  try {
    info = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return { version: undefined, versionProblem: 'GET /version: the answer is not JSON' };
  }
  const gitVersion = (info as { gitVersion?: unknown } | null)?.gitVersion;
  const version = parseKubernetesVersion(info);
  const shown = typeof gitVersion === 'string' ? { gitVersion: gitVersion.slice(0, 100) } : {};
  return version === undefined
    ? { version: undefined, ...shown, versionProblem: 'GET /version: no major.minor version in the answer' }
    : { version, ...shown };
}

interface NonResourceGet {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  readonly accept: string;
  /** Each piece of a 200 body; returns true when the rest is not needed. */
  readonly onChunk: (chunk: Buffer) => boolean;
}

/**
 * A GET of a non-resource path of the current cluster, authenticated as the client's other
 * requests are. Resolves with the HTTP status once a 200 body is read (or no longer needed), or
 * at once for any other status (its body unread); rejects on a network error, the deadline or a
 * body over maxBytes.
 */
async function getNonResource(kubeConfig: KubeConfig, path: string, options: NonResourceGet): Promise<{ status: number }> {
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig names no current cluster');
  // As client-node's Watch builds its URLs: the server URL may carry a path prefix (a proxy's).
  const url = new URL(cluster.server + path);
  const settings: RequestOptions = {};
  await kubeConfig.applyToHTTPSOptions(settings);
  // applyToHTTPSOptions writes an object of headers (the Authorization header, impersonation).
  const credentials = headerObject(settings.headers);
  const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (outcome: { status: number } | Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const request = send(
      url,
      {
        ...settings,
        method: 'GET',
        headers: { ...credentials, accept: options.accept, 'accept-encoding': 'identity' },
      },
      (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        if (status !== 200) {
          finish({ status });
          request.destroy();
          return;
        }
        let bytes = 0;
        response.on('data', (chunk: Buffer) => {
          if (settled) return;
          bytes += chunk.length;
          if (bytes > options.maxBytes) {
            finish(new Error(`the body is larger than ${options.maxBytes} bytes; not read further`));
            request.destroy();
            return;
          }
          if (options.onChunk(chunk)) {
            finish({ status });
            request.destroy();
          }
        });
        response.on('end', () => {
          finish({ status });
        });
        response.on('error', (error) => {
          finish(error);
        });
        // After 'end' this changes nothing; before it, the body was cut short.
        response.on('close', () => {
          finish(new Error('the connection closed before the body ended'));
        });
      },
    );
    const deadline = setTimeout(() => {
      finish(new Error(`no complete answer within ${options.timeoutMs} ms`));
      request.destroy();
    }, options.timeoutMs);
    request.on('error', (error) => {
      finish(error);
    });
    request.end();
  });
}

function headerObject(headers: RequestOptions['headers']): OutgoingHttpHeaders {
  const isList = (value: RequestOptions['headers']): value is readonly string[] => Array.isArray(value);
  return headers === undefined || isList(headers) ? {} : headers;
}

function describeStatus(status: number): string {
  const hint = status === 401 || status === 403 ? ' (does the ClusterRole grant get on this URL to the service account?)' : '';
  return `HTTP ${status}${hint}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
