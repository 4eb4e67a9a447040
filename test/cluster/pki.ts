/**
 * The certificates a loopback control plane needs, as kubeadm lays them out but smaller: one CA
 * that signs kube-apiserver's serving certificate and every client certificate (the cluster-admin
 * the tests use, a kubelet's identity for mirror pods), and the service-account key pair.
 * Elliptic-curve P-256 keys throughout: Go's crypto/x509 accepts them everywhere kube-apiserver
 * reads a key, and they take milliseconds to make where RSA-2048 takes tens.
 */
import { generateKeyPairSync } from 'node:crypto';
import { generate } from 'selfsigned';

export interface Pair {
  readonly cert: string;
  readonly key: string;
}

export interface ControlPlanePki {
  readonly ca: Pair;
  /** kube-apiserver's serving certificate: IP 127.0.0.1 and 10.0.0.1 (the `kubernetes` Service), DNS localhost. */
  readonly apiserver: Pair;
  /** cluster-admin: CN admin, O system:masters. */
  readonly admin: Pair;
  /** The service-account token signing key (private PKCS#8) and its public half (SPKI). */
  readonly serviceAccount: { readonly privateKey: string; readonly publicKey: string };
}

// A fixed window around now that no test outlives: a day back (clock skew between processes is
// nil on one machine, but a certificate dated "now" can be a second in the future for the peer),
// ten years ahead.
function validity(): { notBeforeDate: Date; notAfterDate: Date } {
  const now = Date.now();
  return { notBeforeDate: new Date(now - 86_400_000), notAfterDate: new Date(now + 10 * 365 * 86_400_000) };
}

const keyOptions = { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' } as const;

export async function createCertificateAuthority(commonName: string): Promise<Pair> {
  const ca = await generate([{ name: 'commonName', value: commonName }], {
    ...keyOptions,
    ...validity(),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: ca.cert, key: ca.private };
}

export interface LeafRequest {
  readonly commonName: string;
  /** Subject organizations: Kubernetes reads them as the user's groups. */
  readonly organizations?: readonly string[];
  readonly dnsNames?: readonly string[];
  readonly ips?: readonly string[];
  readonly usage: 'server' | 'client';
  /** Instead of the fixed window around now: e.g. one in the past, for an expired certificate. */
  readonly validity?: { readonly notBeforeDate: Date; readonly notAfterDate: Date };
}

/** A certificate signed by `ca`: serverAuth with the names given, or clientAuth for a user. */
export async function signCertificate(ca: Pair, request: LeafRequest): Promise<Pair> {
  const altNames = [
    ...(request.dnsNames ?? []).map((value) => ({ type: 2 as const, value })),
    ...(request.ips ?? []).map((ip) => ({ type: 7 as const, ip })),
  ];
  const leaf = await generate(
    [
      { name: 'commonName', value: request.commonName },
      ...(request.organizations ?? []).map((value) => ({ name: 'organizationName', value })),
    ],
    {
      ...keyOptions,
      ...(request.validity ?? validity()),
      ca: { key: ca.key, cert: ca.cert },
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: request.usage === 'server', critical: true },
        request.usage === 'server' ? { name: 'extKeyUsage', serverAuth: true } : { name: 'extKeyUsage', clientAuth: true },
        ...(altNames.length > 0 ? [{ name: 'subjectAltName' as const, altNames }] : []),
      ],
    },
  );
  return { cert: leaf.cert, key: leaf.private };
}

export async function createControlPlanePki(): Promise<ControlPlanePki> {
  const ca = await createCertificateAuthority('tolerator-test-kubernetes-ca');
  const [apiserver, admin] = await Promise.all([
    signCertificate(ca, {
      commonName: 'kube-apiserver',
      dnsNames: ['localhost', 'kubernetes', 'kubernetes.default'],
      ips: ['127.0.0.1', '10.0.0.1'],
      usage: 'server',
    }),
    signCertificate(ca, { commonName: 'admin', organizations: ['system:masters'], usage: 'client' }),
  ]);
  const serviceAccount = generateKeyPairSync('ec', {
    namedCurve: 'P-256',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  return { ca, apiserver, admin, serviceAccount };
}
