/**
 * Advisory work, counted. Scheduling warnings are a courtesy: no answer may wait long for them,
 * and a request is free to make them expensive (a pod of 3 MiB against thousands of nodes). So
 * the caller hands in a number of work units, and the code that loops over nodes spends from it
 * before each step; when it is spent the loop stops and the warning says how far it got.
 *
 * A unit is one small, bounded step: a node label or taint looked at, or one entry of a
 * pre-built index visited. Counting steps instead of reading a clock keeps the functions pure
 * and their answers the same on a loaded machine as on an idle one.
 */
export class WorkBudget {
  #remaining: number;
  #ranOut = false;

  constructor(units: number) {
    this.#remaining = units;
  }

  /**
   * Spends `units` and answers true if that many are left. Otherwise answers false and marks the
   * budget as run out: the caller stops there, and nothing after it may start.
   */
  take(units: number): boolean {
    if (this.#ranOut || units > this.#remaining) {
      this.#ranOut = true;
      return false;
    }
    this.#remaining -= units;
    return true;
  }

  /** Some step was refused: the work stopped before it was done. */
  get ranOut(): boolean {
    return this.#ranOut;
  }
}
