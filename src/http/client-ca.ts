/**
 * Who may call the webhook: kube-apiserver's convention for authenticating itself to a webhook is
 * a client certificate (its AdmissionConfiguration's kubeConfigFile names one per webhook host).
 * With `--client-ca-file`, the review endpoints answer only clients whose certificate a CA of that
 * bundle signed; this module reads the bundle and judges one request.
 *
 * Why the TLS layer asks for a certificate but does not insist on one (`requestCert: true,
 * rejectUnauthorized: false`): the server has one port for everything, and the kubelet's probes
 * and Prometheus present no client certificate. They keep reaching /healthz, /readyz and
 * /metrics; every other path answers 401 to a client without a verified certificate. A second
 * port for probes and metrics would change the Deployment, Service and NetworkPolicy of every
 * install, including the managed clusters that cannot use this flag at all.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureContext, TLSSocket } from 'node:tls';
import type { StatusBody } from '../admission/errors.js';

export interface ClientCa {
  readonly subject: string;
  readonly fingerprint256: string;
  readonly notAfter: Date;
}

export interface ClientCaBundle {
  /** The PEM text as read, handed to the TLS layer's `ca` option. */
  readonly pem: string;
  readonly certificates: readonly ClientCa[];
}

/**
 * The paths a client without a certificate may reach: the kubelet's probes and Prometheus'
 * scrape. They answer GETs from local state only and read no request body.
 */
export const openPaths: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

const pemBlock = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

/**
 * Parses a CA bundle: one or more PEM CERTIFICATE blocks, each a parsable X.509 certificate, that
 * Node's TLS layer accepts as trust anchors. Anything else in the file is refused rather than
 * skipped: a private key there means the flag points at the wrong file (a client's key pair),
 * and a block that does not parse would silently trust fewer CAs than the operator listed.
 */
export function parseClientCaBundle(pem: string): ClientCaBundle {
  const certificates: ClientCa[] = [];
  let index = 0;
  for (const match of pem.matchAll(pemBlock)) {
    index++;
    const label = match[1] ?? '';
    if (label !== 'CERTIFICATE') {
      throw new Error(
        `block ${index} is a PEM "${label}", not a CERTIFICATE: the file must hold only the CA certificates that sign client certificates`,
      );
    }
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(match[0]);
    } catch (error) {
      throw new Error(`certificate ${index} does not parse: ${(error as Error).message}`);
    }
    certificates.push({
      subject: certificate.subject.replaceAll('\n', ', '),
      fingerprint256: certificate.fingerprint256,
      notAfter: new Date(certificate.validTo),
    });
  }
  if (certificates.length === 0) {
    throw new Error('no PEM CERTIFICATE block found');
  }
  // What the server will run with: createSecureContext throws on anything OpenSSL refuses.
  createSecureContext({ ca: pem });
  return { pem, certificates };
}

export async function readClientCaBundle(file: string): Promise<ClientCaBundle> {
  return parseClientCaBundle(await readFile(file, 'utf8'));
}

export type ClientVerdict =
  | { readonly authenticated: true }
  | {
      readonly authenticated: false;
      readonly reason: 'no_certificate' | 'untrusted_certificate';
      readonly message: string;
      readonly verifyError?: string;
    };

/**
 * Judges the connection a request came on, from what the TLS handshake verified. Node reports a
 * missing certificate with a verify error too (UNABLE_TO_GET_ISSUER_CERT), so "no certificate" is
 * told apart by the empty peer certificate, not by the error code.
 */
export function judgeClient(req: IncomingMessage): ClientVerdict {
  const socket = req.socket;
  if (socket instanceof TLSSocket && socket.authorized) {
    return { authenticated: true };
  }
  const presented = socket instanceof TLSSocket && Object.keys(socket.getPeerCertificate()).length > 0;
  if (!presented) {
    return {
      authenticated: false,
      reason: 'no_certificate',
      message: 'client certificate required: this webhook answers only clients with a certificate signed by a CA of its --client-ca-file',
    };
  }
  const verifyError = String(socket.authorizationError);
  return {
    authenticated: false,
    reason: 'untrusted_certificate',
    message: `client certificate not accepted (${verifyError}): it must be valid and signed by a CA of the webhook's --client-ca-file`,
    verifyError,
  };
}

/**
 * 401 with a Status body, as kube-apiserver answers an unauthenticated request; the API server
 * treats it as a failed call (the webhook's failurePolicy applies) and logs the message. The
 * connection closes after the answer: a client without credentials gets nothing more from it,
 * and the body it may still be sending is never read in full.
 */
export function refuseUnauthenticated(res: ServerResponse, message: string): void {
  const status: StatusBody = {
    apiVersion: 'v1',
    kind: 'Status',
    metadata: {},
    status: 'Failure',
    message,
    reason: 'Unauthorized',
    code: 401,
  };
  const payload = JSON.stringify(status);
  res.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), connection: 'close' });
  res.end(payload);
}
