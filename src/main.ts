#!/usr/bin/env node
/**
 * The entry point, and the only module that reads process state (the linter holds this:
 * eslint.config.js). It hands the process's I/O to the program (src/cli/program.ts) as a
 * CommandIo, and the exit code the program resolves with back to the process.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { pino, type Logger } from 'pino';
import type { BuildInfo, CommandIo } from './cli/command.js';
import { readBuildInfo } from './build-info.js';
import { runCli } from './cli/program.js';
import { logFormat } from './http/log-format.js';
import { readCgroupMemoryLimit } from './server/cgroup-memory.js';

/**
 * V8's linear regexp engine takes over from a backtracking match past 50,000 backtracks. Every
 * regular expression a tenant reaches runs on re2js or a hand-written scan (src/tenancy/cel.ts,
 * src/validation/name-validation.ts), so this is a second line only; it is set here, before any
 * command runs, so that every way of starting tolerator (npm start, the bin, npx, kubectl's
 * plugin, the image) has it, not only those whose command line passes it. V8 applies it to
 * expressions compiled before it too (test/cli/program.test.ts checks it in a child process).
 */
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

/** The repository or package root: one level above src/main.ts and dist/main.js alike. */
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The version (src/build-info.ts: the release's baked-in values, else package.json); the revision
 * from TOLERATOR_REVISION (the image's build argument), else a REVISION file, else git, else unknown.
 */
function buildInfo(): BuildInfo {
  const info = readBuildInfo(process.env, process.version);
  if (info.revision !== 'unknown') return info;
  let revision: string;
  try {
    revision = readFileSync(join(root, 'REVISION'), 'utf8').trim();
  } catch {
    try {
      revision = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      revision = 'unknown (not a release build, and no git checkout)';
    }
  }
  return { ...info, revision };
}

let inputLog: Logger | undefined;

const io: CommandIo = {
  stdout: (text) => {
    process.stdout.write(text);
  },
  stderr: (text) => {
    process.stderr.write(text);
  },
  readFile: (path) => readFileSync(path, 'utf8'),
  readBytes: (path) => readFileSync(path),
  readStdin: () => readFileSync(0),
  writeFile: (path, text) => {
    writeFileSync(path, text);
  },
  // Warnings only, and to stderr: an offline command's output is what it writes to stdout.
  log: () => (inputLog ??= pino({ ...logFormat, level: 'warn' }, pino.destination(2))),
  env: process.env,
  homeDir: homedir(),
  stderrIsTerminal: process.stderr.isTTY,
  buildInfo,
  constrainedMemory: () => readCgroupMemoryLimit(),
  // Every later SIGTERM and SIGINT is absorbed, not only the first: `npm start` execs the server
  // and forwards the signals it gets, so a Ctrl-C reaches the server twice (from the terminal and
  // from npm), and the second must not cut the drain short.
  untilShutdown: () =>
    new Promise((resolve) => {
      process.on('SIGTERM', () => {
        resolve('SIGTERM');
      });
      process.on('SIGINT', () => {
        resolve('SIGINT');
      });
    }),
};

// A reader that stops early (`tolerator explain … | head`) is not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') {
    process.exit(0);
  }
  throw error;
});

// As a kubectl plugin (kubectl-tolerator on PATH) the help says `kubectl tolerator`.
const name = basename(process.argv[1] ?? '').startsWith('kubectl-tolerator') ? 'kubectl tolerator' : 'tolerator';

runCli(process.argv.slice(2), io, { name }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // runCli turns every error into a code; this is the last guard, without a stack trace.
    process.stderr.write(`tolerator: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 2;
  },
);
