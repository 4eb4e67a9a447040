/**
 * `npm run lint`: eslint over the tree, then the copy-paste detector (jscpd, with its own output),
 * each stage announced and timed. Type-aware eslint over the whole tree takes minutes on two busy
 * cores, and `eslint .` prints nothing until it is done; here it lints the tree part by part (each
 * folder of src/ and test/, each other top-level folder, the files at the root), with eslint's own
 * choice of files in each, so the same files as `eslint .`, and prints a line a part: a slow lint
 * is seen to progress. One ESLint instance keeps the TypeScript program between the parts. The
 * exit code is eslint's (1 on an error), else jscpd's.
 */
import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ESLint } from 'eslint';

const root = join(import.meta.dirname, '..');
/** Never linted: what eslint ignores by default and what eslint.config.js ignores wholesale. */
const skipped = new Set(['node_modules', '.git', 'dist', 'coverage']);
/** Split one level further: most of the files, and most of the time, are there. */
const splitFolders = new Set(['src', 'test']);

const started = performance.now();
const elapsed = (): string => `${((performance.now() - started) / 1000).toFixed(0)} s`;

/** The parts linted one after the other, in the order of a listing. */
function parts(): string[] {
  const entries = readdirSync(root, { withFileTypes: true }).filter((entry) => !skipped.has(entry.name));
  return entries.flatMap((entry) =>
    entry.isDirectory() && splitFolders.has(entry.name)
      ? readdirSync(join(root, entry.name))
          .sort()
          .map((name) => `${entry.name}/${name}`)
      : entry.isDirectory() || entry.isFile()
        ? [entry.name]
        : [],
  );
}

async function runEslint(): Promise<number> {
  const eslint = new ESLint({ cwd: root, errorOnUnmatchedPattern: false });
  const todo: string[] = [];
  for (const part of parts()) {
    // A file eslint would not pick itself (no configuration matches it, or it is ignored) is left
    // out, as `eslint .` leaves it out; a folder is walked by eslint.
    if (
      lstatSync(join(root, part)).isFile() &&
      ((await eslint.isPathIgnored(part)) || (await eslint.calculateConfigForFile(part)) === undefined)
    )
      continue;
    todo.push(part);
  }
  console.log(`lint 1/2: eslint, type-aware, in ${todo.length} parts (a few minutes on two busy cores)`);
  const results: ESLint.LintResult[] = [];
  for (const [index, part] of todo.entries()) {
    const linted = await eslint.lintFiles([part]);
    results.push(...linted);
    const problems = results.reduce((sum, result) => sum + result.errorCount + result.warningCount, 0);
    console.log(
      `eslint ${index + 1}/${todo.length}: ${part} (${linted.length} files), ${results.length} files in all, ${problems} problems, ${elapsed()}`,
    );
  }
  const formatter = await eslint.loadFormatter('stylish');
  const report = await formatter.format(results);
  if (report !== '') console.log(report);
  return results.some((result) => result.errorCount > 0) ? 1 : 0;
}

const eslintCode = await runEslint();
console.log(`lint 2/2: jscpd (copies in src/), ${elapsed()}`);
const jscpd = spawnSync(join(root, 'node_modules', '.bin', 'jscpd'), { cwd: root, stdio: 'inherit' });
const jscpdCode = jscpd.status ?? 1;
console.log(`lint: done in ${elapsed()}: eslint ${eslintCode === 0 ? 'clean' : 'failed'}, jscpd ${jscpdCode === 0 ? 'clean' : 'failed'}`);
process.exitCode = eslintCode !== 0 ? eslintCode : jscpdCode;
