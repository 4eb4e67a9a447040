/**
 * Waiting for what controllers and the scheduler do after a request returns: poll with a
 * deadline, never a fixed sleep as the assertion. A test states what it waits for, and a timeout
 * says so together with the last thing it saw.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Calls `probe` every `intervalMs` until it returns something other than undefined, and returns
 * that. After `timeoutMs` it throws, naming `what` and the last value `describe` gave. With
 * `retryOnError`, a probe that throws (a request refused while a server comes back) counts as
 * "not yet", and the timeout names the last error.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  options: {
    readonly timeoutMs?: number;
    readonly intervalMs?: number;
    readonly describe?: () => string;
    readonly retryOnError?: boolean;
  } = {},
): Promise<T> {
  // 60 s: a controller or the scheduler acts within a second or two on an idle machine; on two
  // cores shared with other builds its informers and queues can lag far more.
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let lastError: unknown;
  for (;;) {
    let value: T | undefined;
    try {
      value = await probe();
    } catch (error) {
      if (options.retryOnError !== true) throw error;
      lastError = error;
    }
    if (value !== undefined) return value;
    if (Date.now() > deadline) {
      const seen = options.describe === undefined ? '' : `; last seen: ${options.describe()}`;
      const failed =
        lastError === undefined ? '' : `; last error: ${lastError instanceof Error ? lastError.message : JSON.stringify(lastError)}`;
      throw new Error(`timed out waiting for ${what}${seen}${failed}`);
    }
    // 250 ms: fast enough that a test does not wait long past the event, slow enough that the
    // polling itself is a negligible load on the API server.
    await sleep(options.intervalMs ?? 250);
  }
}
