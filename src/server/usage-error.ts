/**
 * A usage error: a flag, a file it names or a combination of them that keeps a command (or the
 * server, at start) from running. The CLI's flag parsing throws it, and so do `startServer` and the
 * policy load when what they were given cannot serve; the program turns it into exit code 2
 * (src/cli/exit-codes.ts) like any other error, with its message and no stack.
 */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
