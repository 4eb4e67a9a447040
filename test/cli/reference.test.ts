/** docs/cli.md is the commands' own --help (src/cli/reference.ts): this fails when a command changes and the page does not. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cliReference } from '../../src/cli/reference.js';
import { commands } from '../../src/cli/program.js';

describe('docs/cli.md', () => {
  it('is what `npm run docs:cli` writes from the help of every command (run it after changing a command)', async () => {
    const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'cli.md'), 'utf8');
    assert.equal(page, await cliReference());
    for (const command of commands) assert.ok(page.includes(`\n## tolerator ${command.name}\n`), command.name);
  });
});
