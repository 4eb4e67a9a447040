/**
 * What a command reads and writes, and what a command is. src/main.ts hands every command the
 * process's I/O as a CommandIo; tests hand in their own and read back what the command wrote.
 */
import type { Logger } from 'pino';
import type { FlagSpec, ParsedFlags } from './flags.js';

export interface CommandIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly readFile: (path: string) => string;
  /** A file's bytes: an AdmissionReview is decoded by its parser, which checks the encoding. */
  readonly readBytes: (path: string) => Uint8Array;
  /** All of standard input (`-` in place of a file). */
  readonly readStdin: () => Uint8Array;
  /** Writes a file (`test --junit FILE`). */
  readonly writeFile?: (path: string, text: string) => void;
  /**
   * Warnings about the inputs (skipped cluster-state documents, policy cautions) as log lines on
   * stderr. A function, so that commands that never warn this way never open it.
   */
  readonly log: () => Logger;
  /** The process environment, for commands that find the cluster the way `serve` does (in-cluster detection); absent in most tests. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** The user's home directory, where kubectl's default kubeconfig lives (`~/.kube/config`). */
  readonly homeDir?: string;
  /** Whether stderr is a terminal (progress lines are written only to one). */
  readonly stderrIsTerminal?: boolean;
  /** What `--version` prints, read only when asked. */
  readonly buildInfo?: () => BuildInfo;
  /** The process's cgroup memory limit and the file it was read from (src/server/cgroup-memory.ts), which `serve` sizes its bounds by. */
  readonly constrainedMemory?: () => { readonly bytes: number; readonly file: string } | undefined;
  /** Resolves with the signal's name when the process is asked to stop (SIGTERM, SIGINT); `serve` then drains. */
  readonly untilShutdown?: () => Promise<string>;
}

export interface BuildInfo {
  readonly version: string;
  /** The git commit the program was built from, or a word saying it is not known. */
  readonly revision: string;
  readonly nodeVersion: string;
}

/**
 * One command of the program (src/cli/program.ts lists them). The program parses the flags and
 * the arguments, answers `--help`, and turns whatever `run` throws into exit code 2 with its
 * message (src/cli/exit-codes.ts); `run` returns 0 or 1 (or 2 for inputs it could not judge).
 */
export interface CommandDefinition {
  readonly name: string;
  /** One line, for the program's list of commands. */
  readonly summary: string;
  /** The arguments in commander's syntax: `[file]`, `<dir>`, `<manifest...>`, each with its help. */
  readonly arguments?: readonly (readonly [syntax: string, help: string])[];
  readonly flags: Readonly<Record<string, FlagSpec>>;
  /** Paragraphs shown after the flags in `--help`. */
  readonly details?: string;
  /** What exit codes 0 and 1 mean for this command (2 is always a usage or input error). */
  readonly outcomes: { readonly ok: string; readonly found?: string };
  readonly run: (flags: ParsedFlags, io: CommandIo) => Promise<number>;
}
