/**
 * The layer rules of eslint.layers.js refuse what they are meant to refuse: the real rule set,
 * applied to code placed (by file path) in a pure folder or an edge folder. Type-aware rules are
 * left out, so the code need not be part of the TypeScript project.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { layerConfigs } from '../../eslint.layers.js';

const eslint = new ESLint({
  cwd: new URL('../..', import.meta.url).pathname,
  overrideConfigFile: true,
  overrideConfig: [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser } }, ...layerConfigs],
});

async function restrictedImports(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((message) => message.ruleId === 'no-restricted-imports').map((message) => message.message);
}

describe('the linter holds the layers', () => {
  const rows: { name: string; file: string; code: string; want: RegExp | undefined }[] = [
    {
      name: 'a pure folder importing the edge',
      file: 'src/tolerations/upward.ts',
      code: "import { parseAdmissionReview } from '../admission/review.js';\nexport const x = parseAdmissionReview;\n",
      want: /never imports the edge/,
    },
    {
      name: 'a plugin importing the Kubernetes client',
      file: 'src/plugins/upward.ts',
      code: "import { CoreV1Api } from '@kubernetes/client-node';\nexport const x = CoreV1Api;\n",
      want: /does no I\/O/,
    },
    {
      name: 'scheduling reading a file',
      file: 'src/scheduling/upward.ts',
      code: "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n",
      want: /does no I\/O/,
    },
    {
      name: 'tolerations importing a plugin',
      file: 'src/tolerations/upward.ts',
      code: "import { isPodRequest } from '../plugins/plugin.js';\nexport const x = isPodRequest;\n",
      want: /imports no plugin/,
    },
    {
      name: 'the Event decision writing through the API client (src/events is pure)',
      file: 'src/events/upward.ts',
      code: "import { createEventRecorder } from '../kube/event-recorder.js';\nexport const x = createEventRecorder;\n",
      want: /never imports the edge/,
    },
    {
      name: 'a plugin importing tolerations (downward)',
      file: 'src/plugins/downward.ts',
      code: "import { mergeTolerations } from '../tolerations/merge.js';\nexport const x = mergeTolerations;\n",
      want: undefined,
    },
    {
      name: 'the server importing the CLI',
      file: 'src/server/upward.ts',
      code: "import { readAdmissionSettings } from '../cli/options.js';\nexport const x = readAdmissionSettings;\n",
      want: /imports point one way \(docs\/architecture.md\): src\/server never imports a layer above it/,
    },
    {
      name: 'the server importing the entry point',
      file: 'src/server/upward.ts',
      code: "import '../main.js';\n",
      want: /src\/server never imports a layer above it/,
    },
    {
      name: 'the HTTP app importing the server',
      file: 'src/http/upward.ts',
      code: "import { startServer } from '../server/start-server.js';\nexport const x = startServer;\n",
      want: /src\/http never imports a layer above it/,
    },
    {
      name: 'the admission code importing the Kubernetes client folder',
      file: 'src/admission/upward.ts',
      code: "import { listInPages } from '../kube/paged-list.js';\nexport const x = listInPages;\n",
      want: /src\/admission never imports a layer above it/,
    },
    {
      name: 'the server importing the admission code (downward)',
      file: 'src/server/downward.ts',
      code: "import { pipelineFor } from '../admission/pipeline-settings.js';\nexport const x = pipelineFor;\n",
      want: undefined,
    },
    {
      name: 'the edge importing I/O',
      file: 'src/http/edge.ts',
      code: "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n",
      want: undefined,
    },
    {
      name: 'the named exception reading its directory',
      file: 'src/tenancy/policy-directory.ts',
      code: "import { readdirSync } from 'node:fs';\nexport const x = readdirSync;\n",
      want: undefined,
    },
  ];
  for (const row of rows) {
    it(`${row.want === undefined ? 'allows' : 'refuses'} ${row.name}`, async () => {
      const messages = await restrictedImports(row.code, row.file);
      if (row.want === undefined) {
        assert.deepEqual(messages, []);
      } else {
        assert.equal(messages.length, 1, messages.join('\n'));
        assert.match(messages[0] ?? '', row.want);
      }
    });
  }
});
