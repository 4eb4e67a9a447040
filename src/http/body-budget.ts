/**
 * The bytes of request bodies the server holds at once, over all connections: received and not
 * yet answered. `readBody` (src/http/app.ts) reserves a body's declared length before it reads a
 * byte (all or nothing, so that no two half-read bodies can wait for each other), or each chunk
 * as it arrives when no length is declared, and releases it when the answer has been written.
 * A body that does not fit is refused at once with 503 and `Retry-After` (the API server's client
 * retries it after that many seconds, within the webhook's timeout): waiting for room would hold
 * a connection and its buffers for a body that may never fit.
 *
 * Small bodies (ordinary reviews) may use the whole budget; large ones all but `smallReserveBytes`,
 * so that large bodies, however many, leave room for every ordinary review.
 */

export interface BodyBudgetOptions {
  readonly capacityBytes: number;
  readonly smallReserveBytes: number;
  /** A body of at most this many bytes is small. */
  readonly smallBodyBytes: number;
}

/** One body's share of the budget. */
export interface BodyReservation {
  /** Bytes held for this body. */
  readonly bytes: number;
  /** Adds `bytes` (a chunk of a body with no declared length); false, and nothing added, when it does not fit. */
  grow(bytes: number): boolean;
  /** Gives everything back; later calls do nothing. */
  release(): void;
}

export class BodyBudget {
  readonly capacityBytes: number;
  readonly smallReserveBytes: number;
  readonly smallBodyBytes: number;
  #held = 0;
  #peak = 0;

  constructor(options: BodyBudgetOptions) {
    if (options.smallReserveBytes > options.capacityBytes) {
      throw new RangeError('the small bodies’ reserve cannot exceed the budget');
    }
    this.capacityBytes = options.capacityBytes;
    this.smallReserveBytes = options.smallReserveBytes;
    this.smallBodyBytes = options.smallBodyBytes;
  }

  /** Bytes held now. */
  get held(): number {
    return this.#held;
  }

  /** The most bytes held at once since the budget was made. */
  get peak(): number {
    return this.#peak;
  }

  /**
   * Reserves `bytes` for a body whose size is `expectedBytes` (its Content-Length; undefined when
   * it has none, which counts as large): undefined when they do not fit.
   */
  reserve(bytes: number, expectedBytes: number | undefined): BodyReservation | undefined {
    const small = expectedBytes !== undefined && expectedBytes <= this.smallBodyBytes;
    const limit = small ? this.capacityBytes : this.capacityBytes - this.smallReserveBytes;
    if (!this.#take(bytes, limit)) {
      return undefined;
    }
    let held = bytes;
    let released = false;
    return {
      get bytes() {
        return held;
      },
      grow: (more) => {
        if (released || !this.#take(more, limit)) return false;
        held += more;
        return true;
      },
      release: () => {
        if (released) return;
        released = true;
        this.#held -= held;
      },
    };
  }

  #take(bytes: number, limit: number): boolean {
    if (this.#held + bytes > limit) {
      return false;
    }
    this.#held += bytes;
    if (this.#held > this.#peak) this.#peak = this.#held;
    return true;
  }
}
