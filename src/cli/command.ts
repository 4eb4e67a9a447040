/**
 * The one shape every command has: its arguments and the process's I/O in, an exit code out.
 * src/main.ts builds the I/O from the real process and dispatches; tests hand in their own and
 * read back what the command wrote.
 */
import type { Logger } from 'pino';

export interface CommandIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly readFile: (path: string) => string;
  /** A file's bytes: an AdmissionReview is decoded by its parser, which checks the encoding. */
  readonly readBytes: (path: string) => Uint8Array;
  /** All of standard input (`-` in place of a file). */
  readonly readStdin: () => Uint8Array;
  /**
   * Warnings about the inputs (skipped cluster-state documents, policy cautions) as log lines on
   * stderr. A function, so that commands that never warn this way never open it.
   */
  readonly log: () => Logger;
  /** The process environment, for commands that find the cluster the way `serve` does (in-cluster detection); absent in most tests. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Whether stderr is a terminal: a long command keeps a progress line there only then. */
  readonly stderrIsTerminal?: boolean;
}

export type Command = (argv: readonly string[], io: CommandIo) => Promise<number>;
