/** Messages between bench/run.ts and its load generator (bench/load.ts), one JSON object a line. */

export interface LoadRequest {
  readonly path: '/mutate' | '/validate';
  readonly body: string;
}

export interface LoadJob {
  readonly id: number;
  readonly url: string;
  readonly connections: number;
  readonly seconds: number;
  readonly warmupSeconds: number;
  /** Fixed request rate over all connections; absent: as fast as the server answers. */
  readonly overallRate?: number;
  /** Sent in turn on every connection. */
  readonly requests: readonly LoadRequest[];
}

export interface LoadResult {
  readonly type: 'result';
  readonly id: number;
  readonly requests: number;
  readonly wallSeconds: number;
  readonly rps: number;
  /** Milliseconds. */
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly loadCpuSeconds: number;
}

export type LoadMessage =
  | { readonly type: 'measuring'; readonly id: number }
  | LoadResult
  | { readonly type: 'error'; readonly id: number; readonly message: string };
