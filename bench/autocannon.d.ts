/**
 * The part of autocannon's API the bench uses (autocannon ships no types; the one devDependency
 * the bench may add is autocannon itself, so no @types package).
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';
  import type { ConnectionOptions } from 'node:tls';

  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
    }
    interface Options {
      url: string;
      connections?: number;
      /** Seconds. */
      duration?: number;
      /** Requests per second over all connections (each connection gets an equal share per second). */
      overallRate?: number;
      requests?: Request[];
      /** Seconds. */
      timeout?: number;
      ignoreCoordinatedOmission?: boolean;
      tlsOptions?: ConnectionOptions;
      pipelining?: number;
    }
    interface Result {
      /** Seconds. */
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      requests: { total: number; sent: number; average: number };
    }
    interface Instance extends EventEmitter {
      stop(): void;
    }
  }
  function autocannon(options: autocannon.Options, callback: (error: Error | null, result: autocannon.Result) => void): autocannon.Instance;
  export = autocannon;
}
