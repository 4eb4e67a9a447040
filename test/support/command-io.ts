/**
 * Runs one of tolerator's commands through the program (src/cli/program.ts), as a user's command
 * line is run, with in-memory output: what it wrote to stdout and stderr, and its exit code.
 */
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import type { CommandDefinition, CommandIo } from '../../src/cli/command.js';
import { runCli } from '../../src/cli/program.js';

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** The files the command wrote (`test --junit FILE`), by path; absent when it wrote none. */
  readonly written?: Readonly<Record<string, string>>;
}

export interface CommandInput {
  /** Standard input (`-`); empty unless given. */
  readonly stdin?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly homeDir?: string;
  readonly io?: Partial<CommandIo>;
}

/** `files` shadows the disk for the paths it names; log lines are dropped. */
export async function runCommand(
  command: CommandDefinition,
  argv: readonly string[],
  files: Record<string, string> = {},
  input: CommandInput = {},
): Promise<CommandResult> {
  return runProgram([command.name, ...argv], files, input);
}

/** A whole command line, the command's name first. */
export async function runProgram(
  argv: readonly string[],
  files: Record<string, string> = {},
  input: CommandInput = {},
): Promise<CommandResult> {
  let stdout = '';
  let stderr = '';
  const written: Record<string, string> = {};
  const code = await runCli(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    readFile: (path) => files[path] ?? readFileSync(path, 'utf8'),
    readBytes: (path) => (path in files ? Buffer.from(files[path] ?? '') : readFileSync(path)),
    readStdin: () => Buffer.from(input.stdin ?? ''),
    writeFile: (path, text) => {
      written[path] = text;
    },
    log: () => pino({ level: 'silent' }),
    env: input.env ?? {},
    ...(input.homeDir === undefined ? {} : { homeDir: input.homeDir }),
    buildInfo: () => ({ version: '0.0.0-test', revision: 'test-revision', nodeVersion: 'v0-test' }),
    ...input.io,
  });
  return { code, stdout, stderr, ...(Object.keys(written).length === 0 ? {} : { written }) };
}
