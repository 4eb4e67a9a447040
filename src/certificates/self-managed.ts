/**
 * The serving certificate tolerator issues for itself when there is no cert-manager
 * (`serve --certificate-secret`): a CA and a leaf it signs, kept in one Secret, and the CA bundle
 * written into both webhook configurations. This module decides: whether what the Secret holds
 * can serve, when to renew it, what bundle the webhooks must carry. It generates nothing and reads
 * nothing; src/kube/self-managed-certificates.ts does the I/O and the key generation.
 *
 * The scheme follows open-policy-agent/cert-controller (Gatekeeper's; pkg/rotator/rotator.go):
 * one Secret with ca.crt, ca.key, tls.crt and tls.key, a CA of 10 years and a leaf of 1 year,
 * both backdated by an hour, the leaf renewed with the same CA and a new CA only when the old one
 * nears its end. Two things differ, each for a failure cert-controller has:
 * - renewal at three quarters of the configured lifetime, where cert-controller renews a fixed 90
 *   days before expiry (a quarter of its default year); a fraction keeps a short lifetime (a test's
 *   minute) renewing in time instead of at once, and gives 90 days for the default year as well;
 * - when the CA is replaced, the bundle keeps the previous CA until it expires (as Kyverno does),
 *   so a replica still serving a leaf of the old CA stays trusted until it reads the new Secret.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';

/** The Secret's keys, as cert-controller and cert-manager name them. */
export const secretKeys = { caCert: 'ca.crt', caKey: 'ca.key', tlsCert: 'tls.crt', tlsKey: 'tls.key' } as const;

export interface StoredCertificates {
  /** ca.crt: the current CA first, then any previous CA kept in the bundle. */
  readonly caCert?: string;
  readonly caKey?: string;
  readonly tlsCert?: string;
  readonly tlsKey?: string;
}

export interface SelfManagedSettings {
  /** The names the leaf must carry: the Service's `<name>.<namespace>.svc` and its `.cluster.local` form. */
  readonly dnsNames: readonly string[];
  readonly leafValidityMs: number;
  readonly caValidityMs: number;
}

/** 8,760 h (365 days): cert-controller's defaultServerCertValidityDuration. */
export const defaultLeafValidityMs = 365 * 24 * 3_600_000;
/** 87,600 h (10 × 365 days): cert-controller's defaultCaCertValidityDuration. */
export const defaultCaValidityMs = 10 * defaultLeafValidityMs;
/** 1 h: cert-controller's backdating of notBefore, for clocks of replicas and API servers that disagree. */
export const backdateMs = 3_600_000;
/**
 * Renewal at three quarters of the lifetime: the last quarter (about 90 days of a year, as
 * cert-controller's lookahead) is left to notice a renewal that keeps failing
 * (tolerator_certificate_expiry_timestamp_seconds, alert ToleratorCertificateExpiringSoon).
 */
export const renewAtFraction = 0.75;

/** What the Secret should hold and what to serve from it. */
export type CertificatePlan =
  | {
      /** The Secret can serve as it is. */
      readonly action: 'keep';
      readonly serving: { readonly cert: string; readonly key: string };
      /** PEM, for the webhooks' clientConfig.caBundle (base64 of it). */
      readonly caBundle: string;
      /** The next moment anything must change: the leaf's or the CA's renewal, whichever is first. */
      readonly renewAt: Date;
    }
  | {
      /** The CA can stay; a new leaf from it, valid from notBefore to notAfter. */
      readonly action: 'issue-leaf';
      readonly reason: string;
      readonly ca: { readonly cert: string; readonly key: string };
      /** The bundle ca.crt keeps (unchanged). */
      readonly caBundle: string;
      readonly notBefore: Date;
      readonly notAfter: Date;
    }
  | {
      /** A new CA (and a leaf from it); ca.crt becomes the new CA followed by `keepInBundle`. */
      readonly action: 'issue-ca';
      readonly reason: string;
      /** Previous CAs that are still valid: a replica may still serve a leaf one of them signed. */
      readonly keepInBundle: readonly string[];
      readonly caNotBefore: Date;
      readonly caNotAfter: Date;
      readonly leafNotBefore: Date;
      readonly leafNotAfter: Date;
    };

/**
 * The largest ca.crt read: 64 KiB holds a hundred PEM certificates of ~600 bytes; the Secret is
 * tolerator's own, but a bundle of any size pasted into it must not cost more than a bounded parse.
 */
export const maxBundleBytes = 64 * 1024;

const pemPattern = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----/g;

/** The PEM certificates of a bundle, in order; text between them is ignored, as Go's pem.Decode does. */
export function splitPemBundle(bundle: string): string[] {
  if (bundle.length > maxBundleBytes) throw new Error(`ca.crt is over ${maxBundleBytes} bytes`);
  return [...bundle.matchAll(pemPattern)].map((match) => `${match[0]}\n`);
}

/** The renewal moment of a certificate of the configured lifetime that ends at notAfter. */
export function renewalTime(notAfter: Date, validityMs: number): Date {
  return new Date(notAfter.getTime() - (1 - renewAtFraction) * validityMs);
}

/** Refuses settings under which a leaf could outlive its CA's renewal, which would renew in a loop. */
export function checkSettings(settings: SelfManagedSettings): void {
  if (settings.dnsNames.length === 0) throw new Error('the certificate needs at least one DNS name');
  // A leaf issued when the CA has its last quarter left (caValidity/4) still gets half its own
  // lifetime before the CA is replaced, and so renews at least a quarter of a lifetime later.
  if (!(settings.caValidityMs >= 2 * settings.leafValidityMs)) {
    throw new Error('the CA must be valid at least twice as long as the serving certificate');
  }
  if (!(settings.leafValidityMs >= 60_000)) throw new Error('the serving certificate must be valid for at least 1m');
}

function parse(pem: string | undefined): X509Certificate | undefined {
  if (pem === undefined || pem === '') return undefined;
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

function keyMatches(certificate: X509Certificate, keyPem: string | undefined): boolean {
  if (keyPem === undefined || keyPem === '') return false;
  try {
    return certificate.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    return false;
  }
}

/** The DNS names of a certificate's subjectAltName (Node writes `DNS:a, DNS:b, IP Address:…`). */
export function dnsNamesOf(certificate: X509Certificate): string[] {
  return (certificate.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4));
}

/** The certificates of a bundle that have not expired at `now` (the bundle the webhooks carry). */
export function unexpired(bundle: readonly string[], now: Date): string[] {
  return bundle.filter((pem) => {
    const certificate = parse(pem);
    return certificate !== undefined && new Date(certificate.validTo).getTime() > now.getTime();
  });
}

/** What to do with the Secret's contents at `now`. */
export function planCertificates(stored: StoredCertificates, settings: SelfManagedSettings, now: Date): CertificatePlan {
  const nowMs = now.getTime();
  const bundle = (() => {
    try {
      return splitPemBundle(stored.caCert ?? '');
    } catch {
      return [];
    }
  })();
  const issueCa = (reason: string): CertificatePlan => {
    const caNotAfter = new Date(nowMs + settings.caValidityMs);
    return {
      action: 'issue-ca',
      reason,
      keepInBundle: unexpired(bundle, now),
      caNotBefore: new Date(nowMs - backdateMs),
      caNotAfter,
      leafNotBefore: new Date(nowMs - backdateMs),
      leafNotAfter: new Date(Math.min(nowMs + settings.leafValidityMs, caNotAfter.getTime())),
    };
  };
  const ca = parse(bundle[0]);
  if (ca === undefined) return issueCa(stored.caCert === undefined || stored.caCert === '' ? 'no CA yet' : 'ca.crt does not parse');
  if (!ca.ca) return issueCa('the first certificate of ca.crt is not a CA');
  if (!keyMatches(ca, stored.caKey)) return issueCa('ca.key does not belong to the CA');
  const caNotAfter = new Date(ca.validTo);
  const caRenewAt = renewalTime(caNotAfter, settings.caValidityMs);
  if (nowMs >= caRenewAt.getTime()) return issueCa(`the CA is due for renewal (expires ${caNotAfter.toISOString()})`);
  if (nowMs < new Date(ca.validFrom).getTime()) return issueCa('the CA is not valid yet');

  const caBundle = bundle.join('');
  const issueLeaf = (reason: string): CertificatePlan => ({
    action: 'issue-leaf',
    reason,
    ca: { cert: bundle[0] ?? '', key: stored.caKey ?? '' },
    caBundle,
    notBefore: new Date(nowMs - backdateMs),
    notAfter: new Date(Math.min(nowMs + settings.leafValidityMs, caNotAfter.getTime())),
  });
  const leaf = parse(stored.tlsCert);
  if (leaf === undefined)
    return issueLeaf(stored.tlsCert === undefined || stored.tlsCert === '' ? 'no serving certificate yet' : 'tls.crt does not parse');
  if (!keyMatches(leaf, stored.tlsKey)) return issueLeaf('tls.key does not belong to tls.crt');
  if (!leaf.checkIssued(ca) || !leaf.verify(ca.publicKey)) return issueLeaf('tls.crt is not signed by the current CA');
  const names = new Set(dnsNamesOf(leaf));
  const missing = settings.dnsNames.filter((name) => !names.has(name));
  if (missing.length > 0) return issueLeaf(`tls.crt does not name ${missing.join(', ')}`);
  const leafNotAfter = new Date(leaf.validTo);
  const leafRenewAt = renewalTime(leafNotAfter, settings.leafValidityMs);
  if (nowMs >= leafRenewAt.getTime())
    return issueLeaf(`the serving certificate is due for renewal (expires ${leafNotAfter.toISOString()})`);
  if (nowMs < new Date(leaf.validFrom).getTime()) return issueLeaf('the serving certificate is not valid yet');
  return {
    action: 'keep',
    serving: { cert: stored.tlsCert ?? '', key: stored.tlsKey ?? '' },
    caBundle: unexpired(bundle, now).join(''),
    renewAt: new Date(Math.min(leafRenewAt.getTime(), caRenewAt.getTime())),
  };
}

/** One webhook configuration as the API server returns it: only the fields read here. */
export interface WebhookConfiguration {
  readonly metadata?: { readonly name?: string; readonly resourceVersion?: string };
  readonly webhooks?: readonly { readonly name?: string; readonly clientConfig?: { readonly caBundle?: string } }[];
}

/**
 * The configuration with every webhook's caBundle set to `caBundlePem` (base64, as the field
 * is), or undefined when each already carries it: nothing to write.
 */
export function withCaBundle<T extends WebhookConfiguration>(configuration: T, caBundlePem: string): T | undefined {
  const encoded = Buffer.from(caBundlePem, 'utf8').toString('base64');
  const webhooks = configuration.webhooks ?? [];
  if (webhooks.every((webhook) => webhook.clientConfig?.caBundle === encoded)) return undefined;
  return {
    ...configuration,
    webhooks: webhooks.map((webhook) => ({ ...webhook, clientConfig: { ...webhook.clientConfig, caBundle: encoded } })),
  };
}
