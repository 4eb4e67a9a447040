/**
 * `tolerator serve` as a child process, the way the tests that need a real process (signals,
 * TLS as the API server sees it, several connections at once) start it: from the sources through
 * tsx, with the regexp flag `npm start` uses, on a free port of the loopback address.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

export function spawnServe(args: readonly string[]): ChildProcessWithoutNullStreams {
  return spawn(
    process.execPath,
    [
      '--enable-experimental-regexp-engine-on-excessive-backtracks',
      '--import',
      'tsx',
      'src/main.ts',
      'serve',
      '--port',
      '0',
      '--bind-address',
      '127.0.0.1',
      ...args,
    ],
    { cwd: root, stdio: 'pipe' },
  );
}
