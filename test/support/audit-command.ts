/** Runs `tolerator audit` with in-memory output, for the command's tests over a file and over the fake API server. */
import { auditCommand } from '../../src/cli/audit.js';
import { clusterStateJson } from './audit-fixtures.js';
import { runCommand, type CommandResult } from './command-io.js';

/** A path no disk holds: the tests hand its text in. */
export const stateFile = '/virtual/cluster-state.json';

/** Runs the command with in-memory output; `files` shadows the disk for the paths it names. */
export function audit(
  argv: readonly string[],
  files: Record<string, string> = { [stateFile]: clusterStateJson() },
): Promise<CommandResult> {
  return runCommand(auditCommand, argv, files);
}
