/**
 * What a start has built, undone in reverse: each part, once started, is pushed with how to stop
 * it, and `dispose()` stops them last-built first, so nothing stops before a part that uses it.
 * The composition root (src/server/start-server.ts) builds on one: a start that fails half-way
 * stops what it had started (else the review workers, informers and timers keep the process
 * alive), and `stop()` is the same undoing after the drain.
 *
 * Hand-written: Node.js 20 has no `AsyncDisposableStack` (explicit resource management came in
 * later releases), and what the server needs of it is these few lines.
 */
export class DisposalStack {
  readonly #undo: (() => void | Promise<void>)[] = [];
  #disposed: Promise<void> | undefined;

  /** Keeps `value`, to be stopped by `undo` when the stack is disposed; returns it. */
  use<T>(value: T, undo: (value: T) => void | Promise<void>): T {
    this.defer(() => undo(value));
    return value;
  }

  /** Runs `undo` when the stack is disposed, before everything pushed earlier. */
  defer(undo: () => void | Promise<void>): void {
    if (this.#disposed !== undefined) throw new Error('the stack is disposed already');
    this.#undo.push(undo);
  }

  /**
   * Undoes everything, last pushed first, each awaited before the next; once, however often it is
   * called. A step that fails does not keep the others from running: the first failure is thrown
   * once all have run.
   */
  dispose(): Promise<void> {
    this.#disposed ??= (async () => {
      const failures: unknown[] = [];
      for (const undo of this.#undo.splice(0).reverse()) {
        try {
          await undo();
        } catch (error) {
          failures.push(error);
        }
      }
      if (failures.length > 0) throw failures[0];
    })();
    return this.#disposed;
  }
}

/** `action` run at most once: later calls share the first call's result. */
export function once<T>(action: () => T): () => T {
  const result: { value?: T; done: boolean } = { done: false };
  return () => {
    if (!result.done) {
      result.value = action();
      result.done = true;
    }
    return result.value as T;
  };
}
