/** Test certificates: a CA and serving certificates it signs, as cert-manager would issue them. */
import type { DetailedPeerCertificate, PeerCertificate } from 'node:tls';
import { generate } from 'selfsigned';

export interface Pair {
  readonly cert: string;
  readonly key: string;
}

const now = new Date('2026-11-01T00:00:00Z');
const later = new Date('2036-11-01T00:00:00Z');

export async function createCA(commonName = 'tolerator-ca'): Promise<Pair> {
  const ca = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: now,
    notAfterDate: later,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: ca.cert, key: ca.private };
}

/** A serving certificate signed by `ca`; `dnsNames` empty gives a CN-only certificate. */
export async function createServingCertificate(ca: Pair, dnsNames: readonly string[], commonName = 'tolerator'): Promise<Pair> {
  const leaf = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: now,
    notAfterDate: later,
    ca: { key: ca.key, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      ...(dnsNames.length > 0
        ? [{ name: 'subjectAltName' as const, altNames: dnsNames.map((value) => ({ type: 2 as const, value })) }]
        : []),
    ],
  });
  return { cert: leaf.cert, key: leaf.private };
}

/**
 * The host check kube-apiserver's Go TLS client makes: the name must be among the certificate's
 * DNS subjectAltNames. Since Go 1.15 the Common Name is never used, so a CN-only certificate
 * fails (Node's own check would still fall back to the CN).
 */
export function checkServerIdentityAsGo(host: string, cert: PeerCertificate | DetailedPeerCertificate): Error | undefined {
  const names = (cert.subjectaltname ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4));
  if (names.length === 0) {
    return new Error('x509: certificate relies on legacy Common Name field, use SANs instead');
  }
  return names.includes(host) ? undefined : new Error(`x509: certificate is valid for ${names.join(', ')}, not ${host}`);
}

/**
 * A client certificate signed by `ca`, as kube-apiserver presents to a webhook through its
 * AdmissionConfiguration kubeConfigFile: extended key usage clientAuth only.
 */
export async function createClientCertificate(
  ca: Pair,
  commonName = 'kube-apiserver-webhook-client',
  validity: { readonly notBefore: Date; readonly notAfter: Date } = { notBefore: now, notAfter: later },
): Promise<Pair> {
  const leaf = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: validity.notBefore,
    notAfterDate: validity.notAfter,
    ca: { key: ca.key, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true },
      { name: 'extKeyUsage', clientAuth: true },
    ],
  });
  return { cert: leaf.cert, key: leaf.private };
}
