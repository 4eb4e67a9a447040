/**
 * The serving certificate: read from files (cert-manager's Secret, mounted as a directory) and
 * reloaded when they change, or generated for localhost in development.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { readFile } from 'node:fs/promises';

export interface CertificatePair {
  readonly cert: string;
  readonly key: string;
}

export interface CertificateInfo {
  readonly notAfter: Date;
  readonly subjectAltName: string;
}

/**
 * Checks that a pair can serve: the certificate parses, the key parses and belongs to it, and
 * Node's TLS layer accepts both. Throws with the reason otherwise, so a half-written or
 * mismatched pair is never installed.
 */
export function inspectCertificatePair(pair: CertificatePair): CertificateInfo {
  const certificate = new X509Certificate(pair.cert);
  const key = createPrivateKey(pair.key);
  if (!certificate.checkPrivateKey(key)) {
    throw new Error('the private key does not belong to the certificate');
  }
  createSecureContext({ cert: pair.cert, key: pair.key });
  return { notAfter: new Date(certificate.validTo), subjectAltName: certificate.subjectAltName ?? '' };
}

export async function readCertificatePair(certFile: string, keyFile: string): Promise<CertificatePair> {
  const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  return { cert, key };
}

/**
 * A self-signed certificate for `localhost`, 127.0.0.1 and ::1, valid for 30 days: long enough
 * for a development session, short enough that nobody mistakes it for a real one. ECDSA P-256
 * with SHA-256 (generation takes milliseconds, unlike RSA).
 */
export async function generateDevelopmentCertificate(now: Date): Promise<CertificatePair> {
  const { generate } = await import('selfsigned');
  const thirtyDaysMs = 30 * 24 * 60 * 60 * 1000;
  const result = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: now,
    notAfterDate: new Date(now.getTime() + thirtyDaysMs),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  return { cert: result.cert, key: result.private };
}
