/**
 * The HTTPS server: serves the express app, reloads its certificate when the files change, and
 * shuts down without dropping a review.
 */
import { watch, type FSWatcher } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import type { RequestListener } from 'node:http';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';
import { inspectCertificatePair, readCertificatePair, type CertificatePair } from './serving-certificate.js';

export interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface TlsServerOptions {
  readonly app: RequestListener;
  readonly port: number;
  readonly host?: string;
  readonly certificate: CertificatePair;
  /** When given, the files are watched and the pair reloaded when they change. */
  readonly certificateFiles?: CertificateFiles;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /**
   * How often the files are also re-read, in case a watch event is missed (network file
   * systems, some overlay drivers). The kubelet refreshes mounted Secrets about once a minute
   * (its sync period plus cache TTL), so polling every 60 s adds at most one more minute.
   */
  readonly pollIntervalMs?: number;
  /**
   * The longest a request may take to arrive in full. kube-apiserver gives a webhook at most
   * 30 s (timeoutSeconds' upper bound), so a body still arriving after that is not from it:
   * a slow client is cut off instead of holding a socket forever.
   */
  readonly requestTimeoutMs?: number;
}

export interface TlsServer {
  readonly server: Server;
  address(): AddressInfo;
  /** Re-reads the certificate files; true when a new pair was installed. */
  reloadCertificate(): Promise<boolean>;
  /**
   * Stops accepting connections, lets in-flight requests finish, and closes every connection
   * that is still open after `graceMs`.
   */
  close(graceMs: number): Promise<void>;
}

export async function startTlsServer(options: TlsServerOptions): Promise<TlsServer> {
  const { logger, metrics } = options;
  let current = options.certificate;
  metrics.certificateExpiry.set(inspectCertificatePair(current).notAfter.getTime() / 1000);

  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const server = createServer(
    {
      cert: current.cert,
      key: current.key,
      minVersion: 'TLSv1.2',
      requestTimeout,
      headersTimeout: Math.min(requestTimeout, 10_000),
      // Node checks the two timeouts above only every connectionsCheckingInterval (30 s by
      // default), so a slow client could hold a socket for up to twice the timeout: checking four
      // times per timeout bounds the overrun to a quarter of it.
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeout / 4))),
    },
    options.app,
  );
  // kube-apiserver's client keeps idle connections for 90 s (Go's IdleConnTimeout default in
  // k8s.io/apimachinery's SetTransportDefaults). Closing them sooner races its next request on
  // the same connection and fails that webhook call, so the server waits a little longer.
  server.keepAliveTimeout = 95_000;

  async function reloadCertificate(): Promise<boolean> {
    const files = options.certificateFiles;
    if (files === undefined) {
      return false;
    }
    let next: CertificatePair;
    try {
      next = await readCertificatePair(files.certFile, files.keyFile);
      if (next.cert === current.cert && next.key === current.key) {
        return false;
      }
      const info = inspectCertificatePair(next);
      server.setSecureContext({ cert: next.cert, key: next.key, minVersion: 'TLSv1.2' });
      current = next;
      metrics.certificateExpiry.set(info.notAfter.getTime() / 1000);
      metrics.certificateReloads.inc({ result: 'success' });
      logger.info({ notAfter: info.notAfter.toISOString(), subjectAltName: info.subjectAltName }, 'serving certificate reloaded');
      return true;
    } catch (error) {
      // A Secret update writes the files one at a time; a pair caught halfway fails here and the
      // next event or poll installs it once both halves agree. Until then the old pair serves.
      metrics.certificateReloads.inc({ result: 'failure' });
      logger.warn({ err: error }, 'serving certificate not reloaded; the previous certificate keeps serving');
      return false;
    }
  }

  const watchers: FSWatcher[] = [];
  let poll: NodeJS.Timeout | undefined;
  let debounce: NodeJS.Timeout | undefined;
  if (options.certificateFiles !== undefined) {
    const schedule = (): void => {
      clearTimeout(debounce);
      // Kubelet swaps the `..data` symlink in one rename, but other writers may write the two
      // files in turn: 100 ms lets a burst of events settle into one reload.
      debounce = setTimeout(() => void reloadCertificate(), 100);
    };
    // Watch the directories, not the files: a Secret update replaces a symlink, after which a
    // watch on the old file never fires again.
    for (const directory of new Set([dirname(options.certificateFiles.certFile), dirname(options.certificateFiles.keyFile)])) {
      try {
        const watcher = watch(directory, schedule);
        watcher.on('error', (error) => {
          logger.warn({ err: error, directory }, 'certificate directory watch failed; polling continues');
        });
        watchers.push(watcher);
      } catch (error) {
        logger.warn({ err: error, directory }, 'cannot watch the certificate directory; polling only');
      }
    }
    poll = setInterval(() => void reloadCertificate(), options.pollIntervalMs ?? 60_000);
    poll.unref();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });

  return {
    server,
    address: () => server.address() as AddressInfo,
    reloadCertificate,
    close: async (graceMs) => {
      clearInterval(poll);
      clearTimeout(debounce);
      for (const watcher of watchers) {
        watcher.close();
      }
      const closed = new Promise<void>((resolve) => server.close(() => {
        resolve();
      }));
      // In-flight requests finish; idle keep-alive connections are closed now (server.close does
      // that since Node 19), busy ones after their response. Past the grace, everything goes.
      const forced = setTimeout(() => {
        server.closeAllConnections();
      }, graceMs);
      forced.unref();
      await closed;
      clearTimeout(forced);
    },
  };
}
