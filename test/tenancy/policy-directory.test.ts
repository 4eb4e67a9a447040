import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadPolicyDirectory, watchPolicyDirectory } from '../../src/tenancy/policy-directory.js';
import { formatPolicyLoadError } from '../../src/tenancy/policy.js';
import type { PolicyLoadError } from '../../src/tenancy/policy.js';
import type { PolicySet } from '../../src/tenancy/policy-set.js';
import { labelPolicySpec, policyDocument } from './tenancy-fixtures.js';

const created: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tolerator-policies-'));
  created.push(dir);
  return dir;
}
after(() => {
  for (const dir of created) {
    rmSync(dir, { recursive: true, force: true });
  }
});

function policyYaml(name: string): string {
  return stringify(policyDocument(name, labelPolicySpec()));
}

const validatingAdmissionPolicy = stringify({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicy',
  metadata: { name: 'twin' },
  spec: { validations: [{ expression: 'true' }] },
});

describe('loadPolicyDirectory', () => {
  const rows: { name: string; given: Record<string, string>; want: { policies: string[]; errors: RegExp[] } }[] = [
    {
      name: 'reads yaml, yml and json files and every document of a multi-document file',
      given: {
        'a.yaml': `${policyYaml('a1')}---\n${policyYaml('a2')}`,
        'b.yml': policyYaml('b'),
        'c.json': JSON.stringify(policyDocument('c', labelPolicySpec())),
        'notes.txt': 'not a policy',
      },
      want: { policies: ['a1', 'a2', 'b', 'c'], errors: [] },
    },
    {
      name: 'kind: TenancyPolcy is refused with its file, document index and reason, and the other documents still load',
      given: { 'team.yaml': `${policyYaml('kept')}---\n${policyYaml('misspelt').replace('kind: TenancyPolicy', 'kind: TenancyPolcy')}` },
      want: {
        policies: ['kept'],
        errors: [
          /team\.yaml:\d+: document 2: not a TenancyPolicy: kind "TenancyPolcy" of apiVersion "tolerator\.dev\/v1alpha1" \(every document of a policy file must be apiVersion tolerator\.dev\/v1alpha1, kind TenancyPolicy; keep other manifests out of the directory, or in a subdirectory, which is not read\)$/,
        ],
      },
    },
    {
      name: 'a document of another kind (a ValidatingAdmissionPolicy twin) is refused, not skipped',
      given: { 'twins.yaml': `${validatingAdmissionPolicy}---\n${policyYaml('kept')}` },
      want: {
        policies: ['kept'],
        errors: [
          /^.*twins\.yaml:1: document 1: not a TenancyPolicy: kind "ValidatingAdmissionPolicy" of apiVersion "admissionregistration\.k8s\.io\/v1"/,
        ],
      },
    },
    {
      name: 'a document without a kind, a list and a scalar are refused, each with its index',
      given: { 'odd.yaml': 'apiVersion: tolerator.dev/v1alpha1\nmetadata: {name: x}\n---\n- a\n- b\n---\njust text\n' },
      want: {
        policies: [],
        errors: [
          /odd\.yaml:1: document 1: not a TenancyPolicy: it has no kind \(/,
          /odd\.yaml:4: document 2: not a TenancyPolicy: a list where a mapping with apiVersion and kind belongs/,
          /odd\.yaml:7: document 3: not a TenancyPolicy: a string where a mapping/,
        ],
      },
    },
    {
      name: 'a TenancyPolicy of an unknown apiVersion is refused',
      given: { 'v2.yaml': policyYaml('future').replace('tolerator.dev/v1alpha1', 'tolerator.dev/v2') },
      want: {
        policies: [],
        errors: [/v2\.yaml:\d+: TenancyPolicy "future": apiVersion: must be tolerator\.dev\/v1alpha1, got "tolerator\.dev\/v2"/],
      },
    },
    {
      name: 'a kind longer than any real one is shown clipped',
      given: { 'long.yaml': `kind: ${'K'.repeat(10_000)}\n` },
      want: { policies: [], errors: [/long\.yaml:1: document 1: not a TenancyPolicy: kind "K{62}… \(/] },
    },
    {
      name: 'ignores empty documents, other file names and subdirectories, by the documented rule',
      given: {
        'a.yaml': `# a comment only\n---\n${policyYaml('a')}---\n`,
        'empty.yaml': '',
        'README.md': 'kind: Whatever\n',
        'vap/twin.yaml': validatingAdmissionPolicy,
      },
      want: { policies: ['a'], errors: [] },
    },
    {
      name: 'reports a duplicate policy name across files and keeps the first by file name',
      given: { 'a.yaml': policyYaml('same'), 'b.yaml': policyYaml('same') },
      want: {
        policies: ['same'],
        errors: [/b\.yaml: TenancyPolicy "same": metadata\.name: duplicate policy name: already defined in .*a\.yaml$/],
      },
    },
    {
      name: 'reports a YAML syntax error with its file and line, and loads the other files',
      given: { 'good.yaml': policyYaml('good'), 'bad.yaml': 'kind: TenancyPolicy\nspec: [unclosed\n' },
      want: { policies: ['good'], errors: [/bad\.yaml:\d+: not valid YAML/] },
    },
    {
      name: 'reports a CEL error with file, field and position',
      given: { 'cel.yaml': stringify(policyDocument('cel', { ...labelPolicySpec(), group: 'namespaceObject.metadata.name +' })) },
      want: {
        policies: [],
        errors: [/cel\.yaml:\d+: TenancyPolicy "cel": spec\.group: line 1, column 32 of the expression: Unexpected token: EOF/],
      },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const dir = tempDir();
      for (const [file, text] of Object.entries(row.given)) {
        mkdirSync(join(dir, file, '..'), { recursive: true });
        writeFileSync(join(dir, file), text);
      }
      const loaded = loadPolicyDirectory(dir);
      assert.deepEqual(
        loaded.set.policies.map(({ name }) => name),
        row.want.policies,
      );
      const messages = loaded.errors.map(formatPolicyLoadError);
      assert.equal(messages.length, row.want.errors.length, messages.join('\n'));
      row.want.errors.forEach((pattern, index) => {
        assert.match(messages[index] ?? '', pattern);
      });
    });
  }

  it('reports a missing directory as an error instead of throwing', () => {
    const loaded = loadPolicyDirectory(join(tempDir(), 'absent'));
    assert.match(loaded.errors[0]?.message ?? '', /cannot read the policy directory/);
  });
});

/** Polls until `condition` holds; fails after `timeoutMs` (5 s: inotify delivers within milliseconds). */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('watchPolicyDirectory', () => {
  it('reloads on change, and keeps the last good set when a reload is broken', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'p.yaml'), policyYaml('first'));
    const loads: PolicySet[] = [];
    const failures: (readonly PolicyLoadError[])[] = [];
    const watcher = watchPolicyDirectory(dir, {
      onLoad: (set) => loads.push(set),
      onError: (errors) => failures.push(errors),
      debounceMs: 20,
    });
    try {
      writeFileSync(join(dir, 'p.yaml'), policyYaml('second'));
      await waitFor(() => loads.length === 1, 'the reload of a good change');
      assert.deepEqual(
        loads[0]?.policies.map(({ name }) => name),
        ['second'],
      );

      writeFileSync(join(dir, 'p.yaml'), stringify(policyDocument('third', { ...labelPolicySpec(), group: 'namespaceObject.(' })));
      await waitFor(() => failures.length === 1, 'the report of a broken change');
      assert.equal(loads.length, 1, 'a broken reload never calls onLoad');
      assert.match(failures[0]?.[0]?.field ?? '', /^spec\.group$/);

      writeFileSync(join(dir, 'p.yaml'), policyYaml('fourth'));
      await waitFor(() => loads.length === 2, 'the reload after the fix');
      assert.deepEqual(
        loads[1]?.policies.map(({ name }) => name),
        ['fourth'],
      );
    } finally {
      watcher.close();
    }
  });

  it('follows a ConfigMap mount whose ..data symlink is swapped', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, '..2025_01_01_00_00_00.1'));
    writeFileSync(join(dir, '..2025_01_01_00_00_00.1', 'p.yaml'), policyYaml('before'));
    symlinkSync('..2025_01_01_00_00_00.1', join(dir, '..data'));
    symlinkSync(join('..data', 'p.yaml'), join(dir, 'p.yaml'));
    assert.deepEqual(
      loadPolicyDirectory(dir).set.policies.map(({ name }) => name),
      ['before'],
    );

    const loads: PolicySet[] = [];
    const watcher = watchPolicyDirectory(dir, { onLoad: (set) => loads.push(set), onError: () => undefined, debounceMs: 20 });
    try {
      // What the kubelet's AtomicWriter does: new directory, new link, rename over ..data.
      mkdirSync(join(dir, '..2025_01_01_00_01_00.2'));
      writeFileSync(join(dir, '..2025_01_01_00_01_00.2', 'p.yaml'), policyYaml('after'));
      symlinkSync('..2025_01_01_00_01_00.2', join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      await waitFor(() => loads.some((set) => set.policies[0]?.name === 'after'), 'the reload after the ..data swap');
    } finally {
      watcher.close();
    }
  });

  it('stops calling back once closed', async () => {
    const dir = tempDir();
    let calls = 0;
    const watcher = watchPolicyDirectory(dir, { onLoad: () => (calls += 1), onError: () => (calls += 1), debounceMs: 20 });
    writeFileSync(join(dir, 'p.yaml'), policyYaml('late'));
    watcher.close();
    // 200 ms = ten debounce periods: ample time for a stray timer to fire if close() missed it.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(calls, 0);
  });
});
