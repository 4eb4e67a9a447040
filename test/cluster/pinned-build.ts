/**
 * What every build of a pinned Go tool shares (`npm run control-plane:build`, `kwok:build`,
 * `karpenter:build`): the installed Go checked against the module's `go` line, the same flags,
 * and an idempotent build into a gitignored bin/ folder.
 *
 * Idempotent: bin/BUILD holds a digest of everything the output depends on (go.mod, go.sum, the
 * Go toolchain's version, and what the tool adds: its flags, the files it copies); when it
 * matches and every expected file is there, nothing is built. Everything is built into a fresh
 * `bin.partial/` beside bin/, renamed over it when complete, so an interrupted build never leaves
 * a bin/ that looks complete. Exit codes: 0 built or up to date, 2 no Go or a Go older than the
 * module's `go` line, 1 the build failed.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from './binaries.js';

/**
 * The environment of every `go` command here. CGO off: static binaries that need no C toolchain;
 * GOTOOLCHAIN=local: build with the Go that is installed rather than downloading the one go.mod
 * names (and, for a query, not have an older `go` download a newer toolchain and answer for it,
 * which the build never runs); -mod=readonly: go.sum is the pin, a build never rewrites it.
 */
export function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' };
}

/**
 * Why the installed Go cannot build a module whose go.mod says `go X.Y[.Z]`, or undefined when it
 * can. The build runs with GOTOOLCHAIN=local (it never downloads a toolchain), so an older Go only
 * fails with `go.mod requires go >= …`: Debian 12 packages Go 1.19 and Ubuntu 24.04 Go 1.22, so a
 * fresh machine with its distribution's Go is this case, and it is told as plainly as no Go at
 * all. `goVersion` is `go env GOVERSION` (`go1.26.8`, `go1.25rc1`), undefined when there is no Go;
 * a development build (`devel …`) is taken to be new enough.
 */
export function goToolchainProblem(goMod: string, goVersion: string | undefined): string | undefined {
  const required = /^go\s+(\d+)\.(\d+)(?:\.(\d+))?\s*$/m.exec(goMod);
  const need = required === null ? undefined : required.slice(1).map((part: string | undefined) => Number(part ?? 0));
  if (goVersion === undefined) {
    return `Go is not installed (the module needs Go ${need === undefined ? '' : `${need[0]}.${need[1]}`} or later)`;
  }
  const installed = /^go(\d+)\.(\d+)(?:\.(\d+))?/.exec(goVersion);
  if (need === undefined || installed === null) return undefined;
  const have = installed.slice(1).map((part: string | undefined) => Number(part ?? 0));
  for (let i = 0; i < 3; i++) {
    if (have[i]! > need[i]!) return undefined;
    if (have[i]! < need[i]!) return `Go ${goVersion.slice(2)} is installed, and the module needs Go ${need.join('.')} or later`;
  }
  return undefined;
}

/** `go env GOVERSION` in `moduleDir`, or undefined when Go is not installed. */
export function installedGoVersion(moduleDir: string): string | undefined {
  return goOutput(['env', 'GOVERSION'], moduleDir);
}

/** Why this machine's Go cannot build the module in `moduleDir`, or undefined when it can. */
export function goCannotBuild(moduleDir: string): string | undefined {
  return goToolchainProblem(readFileSync(join(moduleDir, 'go.mod'), 'utf8'), installedGoVersion(moduleDir));
}

/** Runs a command with its output on this process's; its exit status. */
export function run(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = goEnv()): number {
  const result = spawnSync(command, args, { cwd, env, stdio: 'inherit' });
  if (result.error !== undefined) throw result.error;
  return result.status ?? 1;
}

/** A `go` command's trimmed standard output, or undefined when it failed. */
export function goOutput(args: readonly string[], cwd: string): string | undefined {
  const result = spawnSync('go', args, { cwd, encoding: 'utf8', env: goEnv() });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** A `go … -json` command's object, or undefined (its stderr passed on) when it failed. */
export function goJson(args: readonly string[], cwd: string): Record<string, unknown> | undefined {
  const result = spawnSync('go', args, { cwd, encoding: 'utf8', env: goEnv() });
  if (result.status !== 0) {
    process.stderr.write(result.stderr);
    return undefined;
  }
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

export function sizeOf(dir: string): string {
  const du = spawnSync('du', ['-sh', dir], { encoding: 'utf8' });
  return du.status === 0 ? (du.stdout.split('\t')[0] ?? '?') : '?';
}

export interface PinnedTool {
  /** The npm script, the prefix of every line: `kwok:build`. */
  readonly script: string;
  /** What is built, for the lines: `kwok v0.8.0`. */
  readonly title: string;
  /** The module, with go.mod and go.sum. */
  readonly moduleDir: string;
  readonly binDir: string;
  /** The version written to bin/VERSION. */
  readonly version: string;
  /** What the output depends on besides go.mod, go.sum and the Go version: flags, copied files. */
  readonly digestInputs: readonly string[];
  /** The files bin/ must hold (besides VERSION and BUILD) to count as built. */
  readonly outputs: readonly string[];
  /** What a cold build costs, said before it starts: `about 3 minutes of CPU`. */
  readonly coldCost: string;
  /**
   * Builds into `partial` (an empty folder); an error message when it failed, else what to add
   * to the final line, such as how many files were copied beside the binary.
   */
  readonly build: (partial: string) => { readonly error?: string; readonly detail?: string };
}

/** Builds `tool` unless bin/BUILD says it is built already (`force`: build anyway); an exit code. */
export function buildPinnedTool(tool: PinnedTool, force: boolean): number {
  const goMod = readFileSync(join(tool.moduleDir, 'go.mod'), 'utf8');
  const goVersion = installedGoVersion(tool.moduleDir);
  const goProblem = goToolchainProblem(goMod, goVersion);
  if (goProblem !== undefined || goVersion === undefined) {
    console.error(`${tool.script}: ${goProblem ?? 'Go is not installed'}`);
    return 2;
  }
  const digest = createHash('sha256')
    .update([goMod, readFileSync(join(tool.moduleDir, 'go.sum'), 'utf8'), goVersion, ...tool.digestInputs].join('\0'))
    .digest('hex');
  const where = relative(REPO_ROOT, tool.binDir);
  const buildFile = join(tool.binDir, 'BUILD');
  const complete = [...tool.outputs, 'VERSION'].every((name) => existsSync(join(tool.binDir, name)));
  if (!force && complete && existsSync(buildFile) && readFileSync(buildFile, 'utf8').trim() === digest) {
    console.log(`${tool.script}: ${tool.title} already built in ${where} (0 s)`);
    return 0;
  }

  const started = Date.now();
  const partial = `${tool.binDir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  console.log(`${tool.script}: building ${tool.title} with ${goVersion} (cold, ${tool.coldCost})`);
  const built = tool.build(partial);
  if (built.error !== undefined) {
    console.error(`${tool.script}: ${built.error} after ${Math.round((Date.now() - started) / 1000)} s`);
    return 1;
  }
  writeFileSync(join(partial, 'VERSION'), `${tool.version}\n`);
  writeFileSync(join(partial, 'BUILD'), `${digest}\n`);
  rmSync(tool.binDir, { recursive: true, force: true });
  renameSync(partial, tool.binDir);
  const seconds = Math.round((Date.now() - started) / 1000);
  const modCache = goOutput(['env', 'GOMODCACHE'], tool.moduleDir);
  const buildCache = goOutput(['env', 'GOCACHE'], tool.moduleDir);
  console.log(
    `${tool.script}: built ${tool.title} in ${seconds} s` +
      ` (${built.detail === undefined ? '' : `${built.detail}, `}bin ${sizeOf(tool.binDir)}, module cache ${modCache === undefined ? '?' : sizeOf(modCache)}, build cache ${buildCache === undefined ? '?' : sizeOf(buildCache)})`,
  );
  return 0;
}
