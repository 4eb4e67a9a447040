/**
 * `tolerator check`: verifies an install end to end against a cluster, as `linkerd check` and
 * `cmctl check api` do, one line per check (✓, ✗ with a hint, - when skipped), or `-o json`.
 * Exit code: 0 every check passed, 1 one failed, 2 a usage error or no cluster.
 *
 * The cluster is found as kubectl finds it: `--kubeconfig FILE`, else the files of KUBECONFIG (a
 * list), else ~/.kube/config, else the in-cluster service account; `--context` picks a context.
 * This file gathers what the checks need (I/O); src/audit/install-check.ts decides.
 *
 * The serving certificate is seen as the API server sees it: for a webhook with a `url`, by a TLS
 * connection to that url holding only the caBundle; for one with a `service` (not reachable from
 * outside the cluster), from the Secret the Deployment mounts (`--serving-secret`, deploy/'s
 * tolerator-tls), checked against the caBundle for the name NAME.NAMESPACE.svc the API server dials.
 * tolerator's own /metrics (its feature gates, its policies) is read through the url, or through
 * the API server's service proxy.
 */
import { X509Certificate } from 'node:crypto';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { isIP } from 'node:net';
import { checkServerIdentity, connect as tlsConnect } from 'node:tls';
import { parseAllDocuments } from 'yaml';
import {
  checkExitCode,
  defaultsCheck,
  endpointsCheck,
  excludedNamespaceCheck,
  featureGatesCheck,
  formatCheckLines,
  gateSamples,
  gaugeValue,
  policiesCheck,
  servingCertificateCheck,
  tenancyCheck,
  webhookConfigurationCheck,
  type CheckResult,
  type DryRunAnswer,
  type ObservedCertificate,
  type ObservedEndpoints,
  type ObservedWebhook,
} from '../audit/install-check.js';
import { parseTenancyPolicy, tenancyPolicyKind, type TenancyPolicy } from '../tenancy/policy.js';
import type { CommandDefinition, CommandIo } from './command.js';
import { UsageError, type FlagSpec, type ParsedFlags } from './flags.js';

export const checkFlags = {
  kubeconfig: { kind: 'string', placeholder: 'FILE', help: 'the cluster (default: KUBECONFIG, else ~/.kube/config, else in-cluster)' },
  context: { kind: 'string', placeholder: 'NAME', help: 'the kubeconfig context to use (default: its current-context)' },
  'mutating-webhook': { kind: 'string', placeholder: 'NAME', help: 'the MutatingWebhookConfiguration (default tolerator)' },
  'validating-webhook': { kind: 'string', placeholder: 'NAME', help: 'the ValidatingWebhookConfiguration (default tolerator)' },
  'install-namespace': {
    kind: 'string',
    placeholder: 'NS',
    help: "tolerator's namespace, of its ConfigMap and Secret (default tolerator-system)",
  },
  'policies-configmap': { kind: 'string', placeholder: 'NAME', help: 'the ConfigMap of tenancy policies (default tolerator-policies)' },
  'serving-secret': {
    kind: 'string',
    placeholder: 'NAME',
    help: 'the Secret of the serving certificate, for a webhook with a service (default tolerator-tls)',
  },
  namespace: { kind: 'string', placeholder: 'NS', help: 'a reviewed namespace for the dry-run pods (default default)' },
  'excluded-namespace': { kind: 'string', placeholder: 'NS', help: 'a namespace the webhooks exclude (default kube-system)' },
  output: { kind: 'string', placeholder: 'FORMAT', short: 'o', help: 'output format (default text)', choices: ['text', 'json'] },
} as const satisfies Record<string, FlagSpec>;

/** 10 s per network step: an answer later than that is a failure worth reporting, not waiting on. */
const stepTimeoutMs = 10_000;
/** The API server's /metrics is a few MiB; 64 MiB bounds a hostile or broken one (as serve's read). */
const maxMetricsBytes = 64 * 1024 * 1024;

type K8s = typeof import('@kubernetes/client-node');

export const checkCommand: CommandDefinition = {
  name: 'check',
  summary: 'verifies an install on a cluster end to end: webhooks, endpoints, certificate, defaults, tenancy, exclusions, gates, policies',
  flags: checkFlags,
  outcomes: { ok: 'every check passed', found: 'a check failed (its line says which and why)' },
  run: runCheck,
};

async function runCheck(flags: ParsedFlags, io: CommandIo): Promise<number> {
  const str = (name: keyof typeof checkFlags, fallback: string): string => (flags.values.get(name) as string | undefined) ?? fallback;
  const output = str('output', 'text');
  const k8s = await import('@kubernetes/client-node');
  const { loadKubeConfig } = await import('../kube/kube-config.js');
  let kc: KubeConfig | undefined;
  try {
    kc = loadKubeConfig({
      kubeconfigPath: flags.values.get('kubeconfig') as string | undefined,
      context: flags.values.get('context') as string | undefined,
      env: io.env ?? {},
      discover: { homeDir: io.homeDir },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (kc === undefined) {
    throw new UsageError(
      'no cluster: give --kubeconfig FILE, set KUBECONFIG, write ~/.kube/config, or run in a pod with a service account',
    );
  }
  const results = await runChecks(k8s, kc, {
    mutating: str('mutating-webhook', 'tolerator'),
    validating: str('validating-webhook', 'tolerator'),
    installNamespace: str('install-namespace', 'tolerator-system'),
    policiesConfigMap: str('policies-configmap', 'tolerator-policies'),
    servingSecret: str('serving-secret', 'tolerator-tls'),
    namespace: str('namespace', 'default'),
    excludedNamespace: str('excluded-namespace', 'kube-system'),
  });
  io.stdout(
    output === 'json' ? `${JSON.stringify({ checks: results, ok: checkExitCode(results) === 0 }, null, 2)}\n` : formatCheckLines(results),
  );
  return checkExitCode(results);
}

interface CheckTargets {
  readonly mutating: string;
  readonly validating: string;
  readonly installNamespace: string;
  readonly policiesConfigMap: string;
  readonly servingSecret: string;
  readonly namespace: string;
  readonly excludedNamespace: string;
}

type KubeConfig = InstanceType<K8s['KubeConfig']>;

async function runChecks(k8s: K8s, kc: KubeConfig, targets: CheckTargets): Promise<CheckResult[]> {
  const admission = kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
  const results: CheckResult[] = [];
  const reachable: ObservedWebhook[] = [];

  for (const [kind, name] of [
    ['MutatingWebhookConfiguration', targets.mutating],
    ['ValidatingWebhookConfiguration', targets.validating],
  ] as const) {
    const webhooks = await orNotFound(async () => {
      const read =
        kind === 'MutatingWebhookConfiguration'
          ? await admission.readMutatingWebhookConfiguration({ name })
          : await admission.readValidatingWebhookConfiguration({ name });
      return (read.webhooks ?? []).map(observedWebhook);
    });
    if (typeof webhooks === 'string') {
      results.push({ id: 'webhook-configuration', ok: false, message: `${kind} ${name} could not be read: ${webhooks}` });
      continue;
    }
    results.push(webhookConfigurationCheck(kind, name, webhooks));
    for (const webhook of webhooks ?? []) {
      results.push(
        endpointsCheck(kind, webhook, webhook.service === undefined ? undefined : await endpointsOf(core, discovery, webhook.service)),
      );
      if (webhook.service === undefined && webhook.url === undefined) continue;
      results.push(servingCertificateCheck(kind, webhook, await certificateOf(core, webhook, targets), new Date()));
      reachable.push(webhook);
    }
  }

  const probePod = (namespace: string, tolerations: readonly Record<string, string>[] = []): Promise<DryRunAnswer> =>
    dryRunPod(kc, namespace, tolerations);
  results.push(defaultsCheck(targets.namespace, await probePod(targets.namespace)));
  results.push(excludedNamespaceCheck(targets.excludedNamespace, await probePod(targets.excludedNamespace)));

  const configMap = await policiesInConfigMap(core, targets);
  const deny = typeof configMap === 'string' ? undefined : configMap.policies.find((policy) => policy.enforcement === 'Deny');
  const foreignGroup = 'tolerator-check-foreign-group';
  results.push(
    tenancyCheck(
      deny === undefined ? undefined : { namespace: targets.namespace, group: foreignGroup, policy: deny.name },
      deny === undefined
        ? undefined
        : await probePod(targets.namespace, [{ key: deny.taint.key, operator: 'Equal', value: foreignGroup, effect: deny.taint.effect }]),
    ),
  );

  const [first] = reachable;
  const toleratorMetrics = first === undefined ? 'no webhook to reach tolerator through' : await toleratorMetricsText(kc, first);
  const apiServerMetrics = await getText(kc, apiServerUrl(kc, '/metrics'), maxMetricsBytes);
  results.push(
    featureGatesCheck(
      typeof toleratorMetrics === 'string' ? toleratorMetrics : gateSamples(toleratorMetrics.body, 'tolerator_feature_gate_enabled'),
      typeof apiServerMetrics === 'string' ? apiServerMetrics : gateSamples(apiServerMetrics.body, 'kubernetes_feature_enabled'),
    ),
  );
  const loaded =
    typeof toleratorMetrics === 'string'
      ? toleratorMetrics
      : (gaugeValue(toleratorMetrics.body, 'tolerator_policies_loaded') ?? 'no tolerator_policies_loaded sample');
  results.push(
    policiesCheck(
      typeof configMap === 'string'
        ? configMap
        : { name: `${targets.installNamespace}/${targets.policiesConfigMap}`, policies: configMap.documents },
      loaded,
    ),
  );
  return results;
}

interface WebhookClientConfig {
  readonly name: string;
  readonly clientConfig?: { url?: string; caBundle?: string; service?: { namespace: string; name: string; port?: number; path?: string } };
}

function observedWebhook(webhook: WebhookClientConfig): ObservedWebhook {
  const config = webhook.clientConfig ?? {};
  const caBundle = config.caBundle === undefined ? '' : Buffer.from(config.caBundle, 'base64').toString('utf8');
  const service = config.service;
  return {
    name: webhook.name,
    caBundle,
    ...(config.url === undefined ? {} : { url: config.url }),
    // 443: the API's default port for a webhook Service.
    ...(service === undefined
      ? {}
      : {
          service: {
            namespace: service.namespace,
            name: service.name,
            port: service.port ?? 443,
            ...(service.path === undefined ? {} : { path: service.path }),
          },
        }),
  };
}

/** undefined on 404, the error's words on any other failure. */
async function orNotFound<T>(read: () => Promise<T>): Promise<T | undefined | string> {
  try {
    return await read();
  } catch (error) {
    if ((error as { code?: number }).code === 404) return undefined;
    return describe(error);
  }
}

function describe(error: unknown): string {
  const { code, body, message } = error as { code?: number; body?: unknown; message?: string };
  if (typeof code === 'number') {
    let detail = typeof body === 'string' ? body : '';
    try {
      detail = (JSON.parse(detail) as { message?: string }).message ?? detail;
    } catch {
      // not JSON: the body as it is
    }
    return `HTTP ${code}: ${detail.slice(0, 500)}`;
  }
  return message ?? String(error);
}

async function endpointsOf(
  core: InstanceType<K8s['CoreV1Api']>,
  discovery: InstanceType<K8s['DiscoveryV1Api']>,
  service: NonNullable<ObservedWebhook['service']>,
): Promise<ObservedEndpoints | undefined> {
  const exists = await orNotFound(() => core.readNamespacedService({ namespace: service.namespace, name: service.name }));
  if (exists === undefined) return undefined;
  const slices = await discovery.listNamespacedEndpointSlice({
    namespace: service.namespace,
    labelSelector: `kubernetes.io/service-name=${service.name}`,
  });
  let ready = 0;
  let notReady = 0;
  for (const slice of slices.items) {
    // An endpoint whose ready condition is unknown (nil) counts as ready (discovery/v1's documentation).
    for (const endpoint of slice.endpoints) {
      if (endpoint.conditions?.ready === false) notReady++;
      else ready++;
    }
  }
  return { ready, notReady };
}

function pemBlocks(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

async function certificateOf(
  core: InstanceType<K8s['CoreV1Api']>,
  webhook: ObservedWebhook,
  targets: CheckTargets,
): Promise<ObservedCertificate> {
  const service = webhook.service;
  if (service === undefined) return tlsObservation(new URL(webhook.url ?? ''), webhook.caBundle);
  const secret = await orNotFound(() => core.readNamespacedSecret({ namespace: service.namespace, name: targets.servingSecret }));
  if (secret === undefined || typeof secret === 'string') {
    return {
      reached: false,
      error: `Secret ${service.namespace}/${targets.servingSecret}: ${secret ?? 'not found'} (name the mounted one with --serving-secret)`,
    };
  }
  const tlsCrt = secret.data?.['tls.crt'];
  if (tlsCrt === undefined) return { reached: false, error: `Secret ${service.namespace}/${targets.servingSecret} has no tls.crt` };
  try {
    const leaf = new X509Certificate(pemBlocks(Buffer.from(tlsCrt, 'base64').toString('utf8'))[0] ?? '');
    const host = `${service.name}.${service.namespace}.svc`;
    const notAfter = new Date(leaf.validTo);
    const verified = pemBlocks(webhook.caBundle).some((pem) => {
      const ca = new X509Certificate(pem);
      return leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
    });
    return {
      reached: true,
      verified,
      ...(verified ? {} : { verifyError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
      hostMatches: leaf.checkHost(host) !== undefined,
      host,
      notAfter,
    };
  } catch (error) {
    return {
      reached: false,
      error: `Secret ${service.namespace}/${targets.servingSecret}: tls.crt is not a certificate: ${(error as Error).message}`,
    };
  }
}

/** A TLS handshake with the url holding only the caBundle, as the API server's client does. */
function tlsObservation(url: URL, caBundle: string): Promise<ObservedCertificate> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port === '' ? 443 : Number(url.port);
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host,
      port,
      ...(isIP(host) === 0 ? { servername: host } : {}),
      ...(caBundle === '' ? {} : { ca: caBundle }),
      // Verified below, so an unverified or expired certificate is still seen and described.
      rejectUnauthorized: false,
      timeout: stepTimeoutMs,
    });
    socket.once('secureConnect', () => {
      const certificate = socket.getPeerCertificate();
      // A string code (CERT_HAS_EXPIRED) at run time, though typed as an Error (node's _tls_wrap.js).
      const rawError: unknown = socket.authorizationError;
      const verifyError =
        typeof rawError === 'string'
          ? rawError
          : rawError instanceof Error
            ? ((rawError as NodeJS.ErrnoException).code ?? rawError.message)
            : undefined;
      resolve({
        reached: true,
        verified: socket.authorized,
        ...(verifyError === undefined ? {} : { verifyError }),
        hostMatches: checkServerIdentity(host, certificate) === undefined,
        host,
        notAfter: new Date(certificate.valid_to),
      });
      socket.destroy();
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve({ reached: false, error: `no TLS handshake with ${url.host} within ${stepTimeoutMs / 1000} s` });
    });
    socket.once('error', (error: Error) => {
      resolve({ reached: false, error: `${url.host}: ${error.message}` });
    });
  });
}

const probeContainer = { name: 'check', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '1m' } } };

/** A dry-run create (nothing is stored) of a Burstable pod with `tolerations`, by a plain POST: what the API server answers, as it answers it. */
async function dryRunPod(kc: KubeConfig, namespace: string, tolerations: readonly Record<string, string>[]): Promise<DryRunAnswer> {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'tolerator-check-', labels: { 'app.kubernetes.io/created-by': 'tolerator-check' } },
    spec: { containers: [probeContainer], tolerations },
  };
  const answer = await sendJson(kc, 'POST', `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods?dryRun=All`, pod);
  if (typeof answer === 'string') return { created: false, code: 0, message: answer };
  const body = answer.body as { spec?: { tolerations?: { key?: unknown; effect?: unknown }[] }; message?: unknown } | undefined;
  if (answer.status !== 201 && answer.status !== 200) {
    return { created: false, code: answer.status, message: typeof body?.message === 'string' ? body.message : '' };
  }
  const stored = Array.isArray(body?.spec?.tolerations) ? body.spec.tolerations : [];
  return {
    created: true,
    tolerations: stored.map((t) => ({
      ...(typeof t.key === 'string' ? { key: t.key } : {}),
      ...(typeof t.effect === 'string' ? { effect: t.effect } : {}),
    })),
  };
}

/** One JSON request with the kubeconfig's credentials, bounded in time and size. */
async function sendJson(kc: KubeConfig, method: string, path: string, body: unknown): Promise<{ status: number; body: unknown } | string> {
  const options: RequestOptions = {
    method,
    timeout: stepTimeoutMs,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
  };
  await kc.applyToHTTPSOptions(options);
  const url = apiServerUrl(kc, path);
  return new Promise((resolve) => {
    const req = httpsRequest(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown });
        } catch {
          resolve(`${method} ${url.pathname}: HTTP ${res.statusCode ?? 0}: ${text.slice(0, 200)}`);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${stepTimeoutMs / 1000} s`)));
    req.on('error', (error) => {
      resolve(`${method} ${url.pathname}: ${error.message}`);
    });
    req.end(JSON.stringify(body));
  });
}

async function policiesInConfigMap(
  core: InstanceType<K8s['CoreV1Api']>,
  targets: CheckTargets,
): Promise<{ documents: number; policies: TenancyPolicy[] } | string> {
  const name = `${targets.installNamespace}/${targets.policiesConfigMap}`;
  const configMap = await orNotFound(() =>
    core.readNamespacedConfigMap({ namespace: targets.installNamespace, name: targets.policiesConfigMap }),
  );
  if (configMap === undefined) return `ConfigMap ${name} not found (name it with --policies-configmap)`;
  if (typeof configMap === 'string') return `ConfigMap ${name} could not be read: ${configMap}`;
  let documents = 0;
  const policies: TenancyPolicy[] = [];
  // In key order, as the server reads the mounted directory's files.
  for (const [file, text] of Object.entries(configMap.data ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!/\.ya?ml$/.test(file)) continue;
    for (const document of parseAllDocuments(text)) {
      const value: unknown = document.toJS();
      if (typeof value !== 'object' || value === null || (value as { kind?: unknown }).kind !== tenancyPolicyKind) continue;
      documents++;
      const parsed = parseTenancyPolicy(value, { file, lineOf: () => undefined });
      if (parsed.policy !== undefined) policies.push(parsed.policy);
    }
  }
  return { documents, policies };
}

/** tolerator's /metrics: through the webhook's url, or the API server's proxy to its Service. */
async function toleratorMetricsText(kc: KubeConfig, webhook: ObservedWebhook): Promise<{ body: string } | string> {
  const service = webhook.service;
  if (service === undefined) return getText(undefined, new URL('/metrics', webhook.url ?? ''), maxMetricsBytes, webhook.caBundle);
  const path = `/api/v1/namespaces/${encodeURIComponent(service.namespace)}/services/https:${encodeURIComponent(service.name)}:${service.port}/proxy/metrics`;
  return getText(kc, apiServerUrl(kc, path), maxMetricsBytes);
}

/** `path` on the current context's API server (checked to exist when the kubeconfig was loaded). */
function apiServerUrl(kc: KubeConfig, path: string): URL {
  return new URL(path, kc.getCurrentCluster()?.server ?? 'https://localhost');
}

/** A GET with the kubeconfig's credentials (or only `ca`), bounded in time and size; the body, or why not. */
async function getText(kc: KubeConfig | undefined, url: URL, maxBytes: number, ca?: string): Promise<{ body: string } | string> {
  const options: RequestOptions = { timeout: stepTimeoutMs };
  if (kc !== undefined) await kc.applyToHTTPSOptions(options);
  if (ca !== undefined && ca !== '') options.ca = ca;
  return new Promise((resolve) => {
    const req = httpsRequest(url, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          req.destroy();
          resolve(`GET ${url.pathname}: more than ${maxBytes} bytes`);
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        resolve(res.statusCode === 200 ? { body } : `GET ${url.pathname}: HTTP ${res.statusCode ?? 0}: ${body.slice(0, 200)}`);
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${stepTimeoutMs / 1000} s`)));
    req.on('error', (error) => {
      resolve(`GET ${url.pathname}: ${error.message}`);
    });
    req.end();
  });
}
