/**
 * The program's one table of exit codes, and the one place an error becomes one. Every command
 * returns 0 or 1 for its outcome and throws for anything that kept it from deciding; the program
 * (src/cli/program.ts) passes what it throws through `exitForError`. So "denied" (1) is never
 * confused with "the file is missing" (2), which is what a CI step branching on the code needs.
 */
import { CommanderError } from 'commander';

export const exitCodes = {
  /** Allowed, clean, or every case passed. */
  ok: 0,
  /** Denied, a violation found, a case failed, a pod that fits no node. */
  found: 1,
  /** A usage error, an unreadable or invalid input, or an input the command could not judge. */
  usage: 2,
} as const;

/** The exit-code section of every command's `--help`, the same words as the README's table. */
export function exitCodeHelp(outcomes: { readonly ok: string; readonly found?: string }): string {
  return [
    'Exit codes:',
    `  ${exitCodes.ok}  ${outcomes.ok}`,
    ...(outcomes.found === undefined ? [] : [`  ${exitCodes.found}  ${outcomes.found}`]),
    `  ${exitCodes.usage}  a usage error (unknown flag or command, bad value), an unreadable or invalid input`,
  ].join('\n');
}

/**
 * The exit code of what a command threw, and the line to print (undefined when commander has
 * printed it already: its own usage errors, help and version). Every error is a failure to
 * decide, so it is never 1, which means "denied"; the message is the error's own, never a stack.
 */
export function exitForError(error: unknown): { readonly code: number; readonly message: string | undefined } {
  if (error instanceof CommanderError) {
    // Commander exits 0 after --help and --version, and 1 for a usage error.
    return { code: error.exitCode === 0 ? exitCodes.ok : exitCodes.usage, message: undefined };
  }
  return { code: exitCodes.usage, message: error instanceof Error ? describeError(error) : String(error) };
}

/** A file the system could not open says which file and why in words (`x.yaml: no such file or directory`), not Node's `ENOENT: …, open 'x.yaml'`. */
function describeError(error: Error): string {
  const { code, path } = error as { code?: unknown; path?: unknown };
  if (typeof code !== 'string' || typeof path !== 'string') return error.message;
  const reason = /^[A-Z]+: ([^,]+),/.exec(error.message)?.[1];
  return reason === undefined ? error.message : `${path}: ${reason}`;
}
