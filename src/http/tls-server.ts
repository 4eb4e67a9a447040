/**
 * The HTTPS server: serves the express app, reloads its certificate (and the client CA bundle, when
 * client certificates are required) when the files change, and shuts down without dropping a review.
 */
import { randomBytes } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { dirname } from 'node:path';
import type { RequestListener } from 'node:http';
import type { SecureContextOptions, TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { judgeClient, openPaths, readClientCaBundle, refuseUnauthenticated, type ClientCaBundle } from './client-ca.js';
import type { Metrics } from './metrics.js';
import { inspectCertificatePair, readCertificatePair, type CertificatePair } from './serving-certificate.js';

export interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/** `--client-ca-file`: who may call the review endpoints (see src/http/client-ca.ts). */
export interface ClientCaOptions {
  readonly bundle: ClientCaBundle;
  /** When given, the file is watched and the bundle reloaded when it changes. */
  readonly file?: string;
}

export interface TlsServerOptions {
  readonly app: RequestListener;
  readonly port: number;
  readonly host?: string;
  readonly certificate: CertificatePair;
  /** When given, the files are watched and the pair reloaded when they change. */
  readonly certificateFiles?: CertificateFiles;
  /** When given, every path but the probes and /metrics needs a client certificate it verifies. */
  readonly clientCa?: ClientCaOptions;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /**
   * How often the files are also re-read, in case a watch event is missed (network file
   * systems, some overlay drivers). The kubelet refreshes mounted Secrets about once a minute
   * (its sync period plus cache TTL), so polling every 60 s adds at most one more minute.
   */
  readonly pollIntervalMs?: number;
  /** The longest a request may take to arrive in full (default `bodyTimeoutMs`). */
  readonly requestTimeoutMs?: number;
  /** Connections open at once (default: unbounded); src/http/transport-limits.ts derives it from memory. */
  readonly maxConnections?: number;
}

/**
 * 5 s: the webhooks' timeoutSeconds in deploy/. kube-apiserver stops waiting for a webhook's
 * answer after timeoutSeconds, counted from before it writes the request, so a request still
 * arriving after that has nobody waiting for its answer: a slow client is cut off instead of
 * holding a connection and its body's share of the budget (test/deploy checks the two agree).
 */
export const bodyTimeoutMs = 5_000;

export interface TlsServer {
  readonly server: Server;
  address(): AddressInfo;
  /** Re-reads the certificate files; true when a new pair was installed. */
  reloadCertificate(): Promise<boolean>;
  /**
   * Serves `pair` from the next handshake on (a certificate tolerator renewed itself, src/kube/self-managed-certificates.ts);
   * false, and the previous pair kept, when it cannot serve.
   */
  replaceCertificate(pair: CertificatePair): boolean;
  /** Re-reads the client CA file; true when a new bundle was installed. */
  reloadClientCa(): Promise<boolean>;
  /**
   * Stops accepting connections, lets in-flight requests finish, and closes every connection
   * that is still open after `graceMs`.
   */
  close(graceMs: number): Promise<void>;
}

export async function startTlsServer(options: TlsServerOptions): Promise<TlsServer> {
  const { logger, metrics } = options;
  let current = options.certificate;
  let clientCa = options.clientCa?.bundle;
  metrics.certificateExpiry.set(inspectCertificatePair(current).notAfter.getTime() / 1000);
  if (clientCa !== undefined) {
    recordClientCa(clientCa, metrics);
  }

  // Every reload passes the whole context: setSecureContext replaces it, so a certificate reload
  // that named only cert and key would drop the client CAs and refuse every client from then on.
  const secureContext = (): SecureContextOptions => ({
    cert: current.cert,
    key: current.key,
    minVersion: 'TLSv1.2',
    ...(clientCa === undefined ? {} : { ca: clientCa.pem }),
  });

  const requestTimeout = options.requestTimeoutMs ?? bodyTimeoutMs;
  const server = createServer(
    {
      ...secureContext(),
      // A TCP connection that never completes its handshake holds a connection slot: the same
      // bound as a request (Node's default is 120 s).
      handshakeTimeout: requestTimeout,
      // Ask every client for a certificate, verify it against the CAs, and let the handshake
      // succeed either way: the probes and /metrics are answered without one, every other path
      // is refused with a 401 that says why (see src/http/client-ca.ts).
      ...(clientCa === undefined ? {} : { requestCert: true, rejectUnauthorized: false }),
      requestTimeout,
      headersTimeout: Math.min(requestTimeout, 10_000),
      // Node checks the two timeouts above only every connectionsCheckingInterval (30 s by
      // default), so a slow client could hold a socket for up to twice the timeout: checking four
      // times per timeout bounds the overrun to a quarter of it.
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(requestTimeout / 4))),
    },
    clientCa === undefined ? options.app : authenticated(options.app),
  );
  // kube-apiserver's client keeps idle connections for 90 s (Go's IdleConnTimeout default in
  // k8s.io/apimachinery's SetTransportDefaults). Closing them sooner races its next request on
  // the same connection and fails that webhook call, so the server waits a little longer.
  server.keepAliveTimeout = 95_000;
  if (options.maxConnections !== undefined) {
    // Beyond it, new connections are closed as they are accepted, before any TLS work.
    server.maxConnections = options.maxConnections;
  }

  /**
   * Which CA bundle each connection's handshake was verified against, as a generation number
   * bumped on every CA change. A TLS socket takes the server's context when the TCP connection is
   * accepted, so the generation is recorded then, keyed by the connection's addresses, and moved
   * onto the TLS socket once its handshake completes: a handshake still running across a reload
   * is verified against the old CAs and must count as such.
   */
  let trustGeneration = 0;
  const acceptedUnder = new WeakMap<Socket, number>();
  const handshaking = new Map<string, { raw: Socket; generation: number }>();
  const connectionKey = (socket: Socket): string =>
    `${socket.remoteAddress ?? ''}|${String(socket.remotePort)}|${socket.localAddress ?? ''}|${String(socket.localPort)}`;
  if (clientCa !== undefined) {
    server.on('connection', (raw: Socket) => {
      const key = connectionKey(raw);
      handshaking.set(key, { raw, generation: trustGeneration });
      raw.once('close', () => {
        if (handshaking.get(key)?.raw === raw) handshaking.delete(key);
      });
    });
    server.on('secureConnection', (socket: TLSSocket) => {
      const key = connectionKey(socket);
      const entry = handshaking.get(key);
      handshaking.delete(key);
      acceptedUnder.set(socket, entry?.generation ?? -1);
    });
  }

  /** The review endpoints, and any path that is not a probe or /metrics, need a verified client. */
  function authenticated(app: RequestListener): RequestListener {
    return (req, res) => {
      const url = req.url ?? '';
      const query = url.indexOf('?');
      const path = query === -1 ? url : url.slice(0, query);
      if (openPaths.has(path)) {
        app(req, res);
        return;
      }
      const verdict = judgeClient(req);
      if (!verdict.authenticated) {
        metrics.unauthenticatedRequests.inc({ reason: verdict.reason });
        metrics.rejectedRequests.inc({ code: '401' });
        logger.warn(
          { path, remoteAddress: req.socket.remoteAddress, reason: verdict.reason, verifyError: verdict.verifyError },
          'request refused: client not authenticated',
        );
        refuseUnauthenticated(res, verdict.message);
        return;
      }
      if (acceptedUnder.get(req.socket) !== trustGeneration) {
        // Verified against CAs that have since been replaced. This one request is answered (its
        // client was trusted when it connected, and refusing it would fail a webhook call of a
        // client that may well still be trusted), then the connection closes, so the client's
        // next request comes on a new handshake against the current CAs: a CA removed from the
        // file stops being trusted after at most one more request per open connection.
        res.setHeader('connection', 'close');
      }
      app(req, res);
    };
  }

  /** Installs `next` unless it is the pair already served; throws (the old pair stays) when it cannot serve. */
  function install(next: CertificatePair): boolean {
    if (next.cert === current.cert && next.key === current.key) {
      return false;
    }
    const info = inspectCertificatePair(next);
    const previous = current;
    current = next;
    try {
      server.setSecureContext(secureContext());
    } catch (error) {
      current = previous;
      throw error;
    }
    metrics.certificateExpiry.set(info.notAfter.getTime() / 1000);
    metrics.certificateReloads.inc({ result: 'success' });
    logger.info({ notAfter: info.notAfter.toISOString(), subjectAltName: info.subjectAltName }, 'serving certificate reloaded');
    return true;
  }

  async function reloadCertificate(): Promise<boolean> {
    const files = options.certificateFiles;
    if (files === undefined) {
      return false;
    }
    try {
      return install(await readCertificatePair(files.certFile, files.keyFile));
    } catch (error) {
      // A Secret update writes the files one at a time; a pair caught halfway fails here and the
      // next event or poll installs it once both halves agree. Until then the old pair serves.
      metrics.certificateReloads.inc({ result: 'failure' });
      logger.warn({ err: error }, 'serving certificate not reloaded; the previous certificate keeps serving');
      return false;
    }
  }

  function replaceCertificate(pair: CertificatePair): boolean {
    try {
      return install(pair);
    } catch (error) {
      metrics.certificateReloads.inc({ result: 'failure' });
      logger.warn({ err: error }, 'renewed serving certificate not installed; the previous certificate keeps serving');
      return false;
    }
  }

  async function reloadClientCa(): Promise<boolean> {
    const file = options.clientCa?.file;
    if (file === undefined || clientCa === undefined) {
      return false;
    }
    try {
      const next = await readClientCaBundle(file);
      if (next.pem === clientCa.pem) {
        return false;
      }
      const previous = clientCa;
      clientCa = next;
      try {
        server.setSecureContext(secureContext());
      } catch (error) {
        clientCa = previous;
        throw error;
      }
      // A resumed TLS session skips certificate verification and carries the verdict of the
      // handshake that created it, against the old CAs. New ticket keys make every ticket issued
      // so far undecryptable, so each client's next connection verifies against the new CAs.
      // (Node also changes the keys in setSecureContext today; this does not rely on it.)
      server.setTicketKeys(randomBytes(48));
      trustGeneration++;
      recordClientCa(next, metrics);
      metrics.clientCaReloads.inc({ result: 'success' });
      logger.info({ file, certificates: next.certificates }, 'client CA reloaded');
      return true;
    } catch (error) {
      // The CAs keep being the previous file's: refusing every client because a new file is
      // half-written or broken would fail every webhook call until someone noticed.
      metrics.clientCaReloads.inc({ result: 'failure' });
      logger.warn({ err: error, file }, 'client CA file not reloaded; the previous CAs stay trusted');
      return false;
    }
  }

  const watches: (() => void)[] = [];
  const pollIntervalMs = options.pollIntervalMs ?? 60_000;
  if (options.certificateFiles !== undefined) {
    watches.push(
      watchFiles(
        [options.certificateFiles.certFile, options.certificateFiles.keyFile],
        'certificate',
        reloadCertificate,
        pollIntervalMs,
        logger,
      ),
    );
  }
  if (options.clientCa?.file !== undefined) {
    watches.push(watchFiles([options.clientCa.file], 'client CA', reloadClientCa, pollIntervalMs, logger));
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
    replaceCertificate,
    reloadClientCa,
    close: async (graceMs) => {
      for (const stop of watches) {
        stop();
      }
      const closed = new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
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

function recordClientCa(bundle: ClientCaBundle, metrics: Metrics): void {
  const earliest = Math.min(...bundle.certificates.map((certificate) => certificate.notAfter.getTime()));
  metrics.clientCaExpiry.set(earliest / 1000);
}

/**
 * Calls `reload` when the files' directories change, and every `pollIntervalMs` in case a watch
 * event is missed. Returns the function that stops both.
 */
function watchFiles(
  files: readonly string[],
  what: string,
  reload: () => Promise<boolean>,
  pollIntervalMs: number,
  logger: Logger,
): () => void {
  let debounce: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    clearTimeout(debounce);
    // Kubelet swaps the `..data` symlink in one rename, but other writers may write the files in
    // turn: 100 ms lets a burst of events settle into one reload.
    debounce = setTimeout(() => void reload(), 100);
  };
  const watchers: FSWatcher[] = [];
  // Watch the directories, not the files: a Secret update replaces a symlink, after which a watch
  // on the old file never fires again.
  for (const directory of new Set(files.map((file) => dirname(file)))) {
    try {
      const watcher = watch(directory, schedule);
      watcher.on('error', (error) => {
        logger.warn({ err: error, directory }, `${what} directory watch failed; polling continues`);
      });
      watchers.push(watcher);
    } catch (error) {
      logger.warn({ err: error, directory }, `cannot watch the ${what} directory; polling only`);
    }
  }
  const poll = setInterval(() => void reload(), pollIntervalMs);
  poll.unref();
  return () => {
    clearInterval(poll);
    clearTimeout(debounce);
    for (const watcher of watchers) {
      watcher.close();
    }
  };
}
