/**
 * Runs one of tolerator's commands (src/cli/command.ts) with in-memory output, as the command tests
 * do: what it wrote to stdout and stderr, and its exit code.
 */
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import type { Command } from '../../src/cli/command.js';

export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `files` shadows the disk for the paths it names; standard input is empty; log lines are dropped. */
export async function runCommand(command: Command, argv: readonly string[], files: Record<string, string> = {}): Promise<CommandResult> {
  let stdout = '';
  let stderr = '';
  const code = await command(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    readFile: (path) => files[path] ?? readFileSync(path, 'utf8'),
    readBytes: (path) => readFileSync(path),
    readStdin: () => new Uint8Array(),
    log: () => pino({ level: 'silent' }),
    env: {},
  });
  return { code, stdout, stderr };
}
