/**
 * Plain JSON requests to the API server with a KubeConfig's credentials, for the audit: pages of
 * pods, API discovery and policy reports. client-node's typed API would convert every pod of a
 * page into its model classes and back (`toWire` in informers.ts); the audit reads the wire shape,
 * so the bytes are parsed once with JSON.parse and nothing else.
 *
 * A response is resolved only when its whole body arrived: a connection cut in the middle of a
 * body (the server going away, a proxy timing out) rejects, so half a page is never taken for a
 * page.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface ApiResponse {
  readonly status: number;
  /** The parsed JSON body; undefined when the body is empty or not JSON. */
  readonly body: unknown;
}

export interface ApiRequestLimits {
  /** A response body longer than this is not read to its end: the request fails with ResponseTooLarge. */
  readonly maxBodyBytes?: number;
  /**
   * Aborting it ends the request at once, wherever it is (connecting, waiting, mid-body): the
   * promise rejects with the signal's reason (an Error, or one with it as its cause) and the
   * connection is destroyed. The periodic audit's
   * stop(), so that a shutdown does not wait out a page that is slow to arrive.
   */
  readonly signal?: AbortSignal;
}

export type ApiRequest = (
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  body?: unknown,
  limits?: ApiRequestLimits,
) => Promise<ApiResponse>;

/** A response body over the request's maxBodyBytes: the caller may ask for less (a smaller page). */
export class ResponseTooLarge extends Error {
  constructor(
    what: string,
    readonly maxBytes: number,
  ) {
    super(`${what}: the response is more than ${maxBytes} bytes`);
  }
}

/**
 * 60 s: kube-apiserver's own default request timeout (--request-timeout 1m), after which it ends
 * a request itself; a page that has not arrived by then will not. It bounds the whole request,
 * not only the socket's idle time: a body trickling in a byte at a time is never idle, and would
 * hold a run of the audit on one page for ever.
 */
const requestTimeoutMs = 60_000;

export interface ApiRequestOptions {
  /** The deadline of one request, from its start to the end of its body (default 60 s; tests shorten it). */
  readonly timeoutMs?: number;
}

/** Requests against the current cluster of `kubeConfig`; credentials are applied anew to each (tokens rotate). */
export function createApiRequest(kubeConfig: KubeConfig, apiOptions: ApiRequestOptions = {}): ApiRequest {
  const timeoutMs = apiOptions.timeoutMs ?? requestTimeoutMs;
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig names no current cluster');
  const server = cluster.server.replace(/\/+$/, '');
  return async (method, path, body, limits = {}) => {
    const maxBodyBytes = limits.maxBodyBytes ?? Infinity;
    const { signal } = limits;
    const aborted = (): Error => {
      const reason: unknown = signal?.reason;
      return reason instanceof Error ? reason : new Error(`${method} ${path}: aborted`, { cause: reason });
    };
    const throwIfAborted = (): void => {
      if (signal?.aborted === true) throw aborted();
    };
    throwIfAborted();
    const url = new URL(`${server}${path}`);
    const text = body === undefined ? undefined : JSON.stringify(body);
    const options: RequestOptions = {
      method,
      headers: {
        Accept: 'application/json',
        ...(text === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) }),
      },
      timeout: timeoutMs,
    };
    await kubeConfig.applyToHTTPSOptions(options);
    throwIfAborted();
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    let deadline: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const response = new Promise<ApiResponse>((resolve, reject) => {
      deadline = setTimeout(() => {
        req.destroy(new Error(`${method} ${path}: no complete response within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const req = send(url, options, (res) => {
        const chunks: Buffer[] = [];
        let ended = false;
        let bytes = 0;
        const tooLarge = (): void => {
          req.destroy(new ResponseTooLarge(`${method} ${path}`, maxBodyBytes));
        };
        if (Number(res.headers['content-length'] ?? 0) > maxBodyBytes) {
          tooLarge();
          return;
        }
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          // Stop reading before the body is held: a page of huge pods must not fill the memory reviews are answered with.
          if (bytes > maxBodyBytes) tooLarge();
          else chunks.push(chunk);
        });
        res.on('end', () => {
          ended = true;
          const raw = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = raw === '' ? undefined : JSON.parse(raw);
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
        res.on('close', () => {
          if (!ended) reject(new Error(`${method} ${path}: the connection closed before the response was complete`));
        });
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no data for ${timeoutMs / 1000} s`)));
      req.on('error', reject);
      onAbort = () => {
        // Rejected first, so the abort is what the caller sees, not the destroyed connection's error.
        reject(aborted());
        req.destroy();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.end(text);
    });
    return response.finally(() => {
      clearTimeout(deadline);
      if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
    });
  };
}

/** The message of a Status body, or the HTTP status. */
export function describeFailure(response: ApiResponse): string {
  const body = response.body;
  const message =
    typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string'
      ? (body as { message: string }).message
      : '';
  return message === '' ? `HTTP ${response.status}` : `HTTP ${response.status}: ${message}`;
}
