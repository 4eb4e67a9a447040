/**
 * The one shape every command has: its arguments and the process's I/O in, an exit code out.
 * src/main.ts builds the I/O from the real process and dispatches; tests hand in their own and
 * read back what the command wrote.
 */
export interface CommandIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly readFile: (path: string) => string;
}

export type Command = (argv: readonly string[], io: CommandIo) => Promise<number>;
