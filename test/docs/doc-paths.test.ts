/**
 * The map stays true: every repository path the README and the docs/ pages name exists, every
 * relative link (and its #anchor) resolves, and every rule of docs/kubernetes-rules.md names the
 * tests that hold it. A path is a backticked span that starts with a top-level folder of the
 * repository (`src/…`, `test/…`, `deploy/…`), read from the repository's root wherever the page
 * is; a link is read from the page's own folder, as GitHub resolves it.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const topFolders = ['src', 'test', 'docs', 'deploy', 'policies', 'examples', 'bench', 'tools', '.ci'];
/** Build output a fresh clone does not have (.gitignore): named in the docs, never checked. */
const generated = [/^tools\/controlplane\/[^/]+\/bin(\.partial)?(\/|$)/, /^tools\/(kwok|karpenter)\/bin(\.partial)?(\/|$)/];

/**
 * Paths named or linked here that other branches of the same issue write (runbooks: the alerts'
 * runbook_url targets; cli: the reference generated from the commands' help; the differential
 * suite). A path that exists must leave this list (the last test fails until it does), so it
 * only ever shrinks.
 */
const pathsBeingWritten: readonly string[] = [];
const beingWritten = (path: string): boolean => pathsBeingWritten.some((pending) => path === pending || path.startsWith(`${pending}/`));

const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const text = new Map(pages.map((page) => [page, readFileSync(join(root, page), 'utf8')]));

/** Markdown without its fenced code blocks: a shell example's paths are not the map's. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** The repository paths a page names in backticks. */
export function namedPaths(markdown: string): string[] {
  const paths = new Set<string>();
  for (const [, span = ''] of prose(markdown).matchAll(/`([^`\n]+)`/g)) {
    const path = span.replace(/[.,:;)]+$/, '');
    if (/\s/.test(path) || /:\d/.test(path)) continue; // a command line or a message, not a path
    const first = path.split('/')[0] ?? '';
    if (path.includes('/') && topFolders.includes(first)) paths.add(path);
  }
  return [...paths];
}

/** A glob (`*`, `**`, `<minor>`) as a regular expression over repository paths. */
function globPattern(path: string): RegExp {
  const source = path
    .replace(/\/$/, '')
    .split(/(\*\*\/|\*|<[^>]+>)/)
    .map((part) =>
      part === '**/' ? '(?:.*/)?' : part === '*' || part.startsWith('<') ? '[^/]*' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('');
  return new RegExp(`^${source}$`);
}

function allPaths(dir = root): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === '.git') continue;
    const path = join(dir, entry.name);
    found.push(relative(root, path));
    if (entry.isDirectory()) found.push(...allPaths(path));
  }
  return found;
}

function exists(path: string, repository: readonly string[]): boolean {
  if (/[*<]/.test(path)) {
    const pattern = globPattern(path);
    return repository.some((candidate) => pattern.test(candidate));
  }
  return existsSync(join(root, path));
}

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
export function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

function anchors(markdown: string): Set<string> {
  return new Set([...prose(markdown).matchAll(/^#{1,6} (.+)$/gm)].map(([, heading = '']) => anchorOf(heading)));
}

describe('the map: README.md and docs/', () => {
  it('reads a backticked repository path, a glob and a heading as GitHub does', () => {
    assert.deepEqual(namedPaths('`src/plugins/registry.ts`, `deploy/` and `test/**/*.test.ts`; not `plugin.ts` nor `--x a/b`'), [
      'src/plugins/registry.ts',
      'deploy/',
      'test/**/*.test.ts',
    ]);
    assert.ok(globPattern('test/**/*.test.ts').test('test/a/b.test.ts'));
    assert.ok(!globPattern('test/e2e/*.e2e.ts').test('test/e2e/x/y.e2e.ts'));
    assert.equal(anchorOf('Flags of `tolerator serve`'), 'flags-of-tolerator-serve');
    assert.equal(anchorOf('Node selectors per namespace (PodNodeSelector)'), 'node-selectors-per-namespace-podnodeselector');
  });

  it('names only repository paths that exist', () => {
    const repository = allPaths();
    const missing = pages.flatMap((page) =>
      namedPaths(text.get(page) ?? '')
        .filter((path) => !generated.some((pattern) => pattern.test(path)) && !beingWritten(path) && !exists(path, repository))
        .map((path) => `${page}: ${path}`),
    );
    assert.deepEqual(missing, []);
  });

  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target = ''] of prose(text.get(page) ?? '').matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [file = '', anchor] = target.split('#');
        const resolved = file === '' ? page : relative(root, join(root, dirname(page), file));
        if (beingWritten(resolved)) continue;
        if (!existsSync(join(root, resolved))) {
          broken.push(`${page}: ${target} (no ${resolved})`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md') && !anchors(readFileSync(join(root, resolved), 'utf8')).has(anchor))
          broken.push(`${page}: ${target} (no heading #${anchor} in ${resolved})`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('every rule of docs/kubernetes-rules.md names the tests that hold it', () => {
    const rules = (text.get('docs/kubernetes-rules.md') ?? '').split(/^## /m).slice(1);
    assert.ok(rules.length >= 10, `only ${rules.length} sections`);
    const untested = rules
      .filter((section) => !section.startsWith('Deliberate differences from upstream'))
      .filter((section) => !/^\| tests \|.*`test\/[^`]+`/m.test(section))
      .map((section) => section.split('\n')[0]);
    assert.deepEqual(untested, []);
  });

  it('lists as being written only paths that do not exist yet', () => {
    assert.deepEqual(
      pathsBeingWritten.filter((path) => existsSync(join(root, path))),
      [],
      'remove the paths that landed from pathsBeingWritten',
    );
  });
});
