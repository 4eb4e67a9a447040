/** Runs `tolerator audit` with in-memory output, for the command's tests over a file and over the fake API server. */
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { auditCommand } from '../../src/cli/audit.js';
import { clusterStateJson } from './audit-fixtures.js';

/** A path no disk holds: the tests hand its text in. */
export const stateFile = '/virtual/cluster-state.json';

/** Runs the command with in-memory output; `files` shadows the disk for the paths it names. */
export async function audit(
  argv: readonly string[],
  files: Record<string, string> = { [stateFile]: clusterStateJson() },
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await auditCommand(argv, {
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
