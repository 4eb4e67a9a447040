/**
 * `serve --certificate-secret`: tolerator issues and rotates its own serving certificate, for
 * clusters without cert-manager. The decisions are src/certificates/self-managed.ts's; this is
 * the I/O around them: the Secret read and written (with its resourceVersion, so that replicas
 * renewing at the same moment do not overwrite each other: the loser gets a 409, reads the
 * winner's certificate and serves it), the keys generated, the webhooks' caBundle written.
 *
 * The Secret is created empty by the chart or the overlay, never by tolerator: RBAC cannot limit
 * `create` to one name (the name is not known when `create` is authorized), while get and update
 * can be, so tolerator's grant names that one Secret and the two webhook configurations.
 */
import type { Logger } from 'pino';
import {
  checkSettings,
  planCertificates,
  secretKeys,
  splitPemBundle,
  withCaBundle,
  type CertificatePlan,
  type SelfManagedSettings,
  type StoredCertificates,
  type WebhookConfiguration,
} from '../certificates/self-managed.js';
import type { ApiRequest } from './api-requests.js';

export interface SelfManagedCertificatesOptions {
  readonly request: ApiRequest;
  readonly namespace: string;
  readonly secretName: string;
  /** Names of the MutatingWebhookConfiguration and the ValidatingWebhookConfiguration whose caBundle is tolerator's. */
  readonly mutatingWebhook?: string;
  readonly validatingWebhook?: string;
  readonly settings: SelfManagedSettings;
  readonly now: () => Date;
  readonly logger: Logger;
  /** Called with each new serving pair after the first (the server swaps its TLS context). */
  readonly onRenewed?: (pair: { cert: string; key: string }) => void;
  /**
   * The longest wait between two reads of the Secret, even when nothing is due: another replica
   * may have renewed it, or someone replaced the caBundle. 5 min: a GET of one Secret and of two
   * webhook configurations per replica, which costs the API server nothing worth counting.
   */
  readonly checkIntervalMs?: number;
}

export interface SelfManagedCertificates {
  /** The pair to serve, once the Secret holds one and the webhooks trust its CA. */
  readonly current: () => { cert: string; key: string };
  stop(): void;
}

interface SecretObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  type?: string;
  data?: Record<string, string>;
  [field: string]: unknown;
}

const decode = (value: string | undefined): string | undefined =>
  value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
const encode = (value: string): string => Buffer.from(value, 'utf8').toString('base64');

function storedIn(secret: SecretObject): StoredCertificates {
  const data = secret.data ?? {};
  return {
    caCert: decode(data[secretKeys.caCert]),
    caKey: decode(data[secretKeys.caKey]),
    tlsCert: decode(data[secretKeys.tlsCert]),
    tlsKey: decode(data[secretKeys.tlsKey]),
  };
}

const keyOptions = { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' } as const;

/** The keys and certificates a plan asks for (ECDSA P-256 with SHA-256: milliseconds to make, accepted by every API server). */
async function issue(
  plan: Exclude<CertificatePlan, { action: 'keep' }>,
  settings: SelfManagedSettings,
): Promise<Required<StoredCertificates>> {
  const { generate } = await import('selfsigned');
  let ca: { cert: string; key: string };
  let bundle: string;
  let leafNotBefore: Date;
  let leafNotAfter: Date;
  if (plan.action === 'issue-ca') {
    const generated = await generate([{ name: 'commonName', value: `tolerator-ca@${Math.floor(plan.caNotBefore.getTime() / 1000)}` }], {
      ...keyOptions,
      notBeforeDate: plan.caNotBefore,
      notAfterDate: plan.caNotAfter,
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      ],
    });
    ca = { cert: generated.cert, key: generated.private };
    bundle = [ca.cert, ...plan.keepInBundle].map((pem) => (pem.endsWith('\n') ? pem : `${pem}\n`)).join('');
    leafNotBefore = plan.leafNotBefore;
    leafNotAfter = plan.leafNotAfter;
  } else {
    ca = plan.ca;
    bundle = plan.caBundle;
    leafNotBefore = plan.notBefore;
    leafNotAfter = plan.notAfter;
  }
  const leaf = await generate([{ name: 'commonName', value: settings.dnsNames[0] ?? 'tolerator' }], {
    ...keyOptions,
    notBeforeDate: leafNotBefore,
    notAfterDate: leafNotAfter,
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: settings.dnsNames.map((value) => ({ type: 2 as const, value })) },
    ],
  });
  return { caCert: bundle, caKey: ca.key, tlsCert: leaf.cert, tlsKey: leaf.private };
}

function failure(what: string, status: number, body: unknown): Error {
  const message = (body as { message?: unknown } | undefined)?.message;
  return new Error(`${what}: HTTP ${status}${typeof message === 'string' ? `: ${message}` : ''}`);
}

/**
 * Brings the Secret and the webhooks to a state that serves, and keeps them there. Resolves once
 * the first pair is ready (the server starts with it); rejects when the Secret cannot be read or
 * written, so that a misconfigured install fails at start, with the reason, instead of serving a
 * certificate nobody trusts.
 */
export async function startSelfManagedCertificates(options: SelfManagedCertificatesOptions): Promise<SelfManagedCertificates> {
  checkSettings(options.settings);
  const { request, logger } = options;
  const secretPath = `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/secrets/${encodeURIComponent(options.secretName)}`;
  const checkIntervalMs = options.checkIntervalMs ?? 5 * 60_000;

  /** One pass: returns the pair to serve and when to look again. */
  async function reconcile(): Promise<{ pair: { cert: string; key: string }; caBundle: string; renewAt: Date }> {
    // A conflict means another replica wrote first: read its result and plan again. Five rounds:
    // each conflict is one replica's write, and a Deployment of tolerator has a handful.
    for (let attempt = 0; attempt < 5; attempt++) {
      const read = await request('GET', secretPath);
      if (read.status === 404) {
        throw new Error(
          `Secret ${options.namespace}/${options.secretName} not found: the chart (certificates.mode=selfManaged) and deploy/overlays/self-managed-certs create it empty, and tolerator fills it`,
        );
      }
      if (read.status !== 200) throw failure(`GET Secret ${options.namespace}/${options.secretName}`, read.status, read.body);
      const secret = read.body as SecretObject;
      const plan = planCertificates(storedIn(secret), options.settings, options.now());
      if (plan.action === 'keep') return { pair: plan.serving, caBundle: plan.caBundle, renewAt: plan.renewAt };
      logger.info(
        { secret: `${options.namespace}/${options.secretName}`, action: plan.action, reason: plan.reason },
        'issuing the serving certificate',
      );
      const issued = await issue(plan, options.settings);
      const updated: SecretObject = {
        ...secret,
        data: {
          ...(secret.data ?? {}),
          [secretKeys.caCert]: encode(issued.caCert),
          [secretKeys.caKey]: encode(issued.caKey),
          [secretKeys.tlsCert]: encode(issued.tlsCert),
          [secretKeys.tlsKey]: encode(issued.tlsKey),
        },
      };
      const write = await request('PUT', secretPath, updated);
      if (write.status === 409) {
        logger.info('the certificate Secret changed while renewing (another replica); reading it again');
        continue;
      }
      if (write.status !== 200) throw failure(`PUT Secret ${options.namespace}/${options.secretName}`, write.status, write.body);
    }
    throw new Error(`Secret ${options.namespace}/${options.secretName}: still changing after 5 attempts`);
  }

  async function injectCaBundle(caBundle: string): Promise<void> {
    const targets = [
      ['mutatingwebhookconfigurations', options.mutatingWebhook],
      ['validatingwebhookconfigurations', options.validatingWebhook],
    ] as const;
    for (const [resource, name] of targets) {
      if (name === undefined) continue;
      const path = `/apis/admissionregistration.k8s.io/v1/${resource}/${encodeURIComponent(name)}`;
      for (let attempt = 0; ; attempt++) {
        const read = await request('GET', path);
        if (read.status !== 200) throw failure(`GET ${resource}/${name}`, read.status, read.body);
        const next = withCaBundle(read.body as WebhookConfiguration, caBundle);
        if (next === undefined) break;
        const write = await request('PUT', path, next);
        if (write.status === 200) {
          logger.info({ [resource]: name }, 'caBundle written');
          break;
        }
        if (write.status !== 409 || attempt >= 4) throw failure(`PUT ${resource}/${name}`, write.status, write.body);
      }
    }
  }

  let state = await reconcile();
  await injectCaBundle(state.caBundle);
  logger.info(
    {
      secret: `${options.namespace}/${options.secretName}`,
      renewAt: state.renewAt.toISOString(),
      cas: splitPemBundle(state.caBundle).length,
    },
    'self-managed serving certificate ready',
  );

  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = (delayMs: number): void => {
    if (stopped) return;
    // Capped at the longest delay setTimeout keeps (2^31 - 1 ms, 24.8 days); the next pass reschedules.
    timer = setTimeout(() => void pass(), Math.max(1_000, Math.min(delayMs, 2_147_483_647, checkIntervalMs)));
    timer.unref();
  };
  const pass = async (): Promise<void> => {
    try {
      const next = await reconcile();
      await injectCaBundle(next.caBundle);
      if (next.pair.cert !== state.pair.cert || next.pair.key !== state.pair.key) {
        options.onRenewed?.(next.pair);
      }
      state = next;
      schedule(state.renewAt.getTime() - options.now().getTime());
    } catch (error) {
      // The current pair keeps serving; its last quarter of validity is the time left to fix this.
      logger.warn({ err: error }, 'serving certificate check failed; retrying in 30 s');
      schedule(30_000);
    }
  };
  schedule(state.renewAt.getTime() - options.now().getTime());

  return {
    current: () => state.pair,
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
