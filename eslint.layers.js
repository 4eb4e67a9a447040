// @ts-check
/**
 * The layers, held by the linter (docs/architecture.md says why). The pure folders decide; they
 * import no I/O (files, sockets, HTTP, logging, the Kubernetes client) and nothing from the edge
 * (src/admission, src/http, src/kube, src/server, src/cli, src/main.ts), which calls them and
 * never the other way round. src/tolerations is the bottom of the pure layers: it imports no
 * plugin. The edge is ordered too (`edgeLayers`): nothing below src/cli imports it.
 *
 * The one named exception is src/tenancy/policy-directory.ts, which reads and watches the policy
 * directory for the edge, next to the parser it feeds.
 */

/** Modules that do I/O or belong to the edge's frameworks. */
const ioModules = [
  'node:fs',
  'node:fs/promises',
  'node:net',
  'node:tls',
  'node:http',
  'node:https',
  'node:child_process',
  'node:worker_threads',
  'express',
  'pino',
  '@kubernetes/client-node',
];
/** The edge, as seen from a pure folder one level below src/. */
const edgeFolders = ['../admission/*', '../http/*', '../kube/*', '../server/*', '../cli/*', '../main.js'];

const pureFolders = ['tolerations', 'scheduling', 'tenancy', 'plugins', 'api', 'validation', 'audit', 'export', 'certificates', 'events'];

/**
 * @param {readonly string[]} extraPatterns
 * @returns {import('eslint').Linter.RuleEntry}
 */
function restricted(extraPatterns) {
  return [
    'error',
    {
      paths: ioModules.map((name) => ({
        name,
        message: 'a pure folder does no I/O: take the value as a parameter and let the edge read it',
      })),
      patterns: [
        {
          group: edgeFolders,
          message: 'a pure folder never imports the edge (src/admission, src/http, src/kube, src/server, src/cli): the edge calls it',
        },
        ...extraPatterns.map((group) => ({ group: [group], message: 'src/tolerations is the bottom pure layer: it imports no plugin' })),
      ],
    },
  ];
}

/**
 * The edge's own order, top to bottom: src/cli (and src/main.ts) → src/server → src/http and
 * src/kube (side by side) → src/admission. Each edge folder lists what sits above it, which it
 * never imports: what the server and the offline commands share lives below the CLI.
 */
const edgeLayers = [
  { folder: 'server', above: ['../cli/*', '../main.js'] },
  { folder: 'http', above: ['../cli/*', '../main.js', '../server/*', '../kube/*'] },
  { folder: 'kube', above: ['../cli/*', '../main.js', '../server/*', '../http/*'] },
  { folder: 'admission', above: ['../cli/*', '../main.js', '../server/*', '../http/*', '../kube/*'] },
];

/** @type {import('eslint').Linter.Config[]} */
export const layerConfigs = [
  ...edgeLayers.map(({ folder, above }) => ({
    files: [`src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': /** @type {import('eslint').Linter.RuleEntry} */ ([
        'error',
        {
          patterns: [
            {
              group: above,
              message: `imports point one way (docs/architecture.md): src/${folder} never imports a layer above it; move what both need below`,
            },
          ],
        },
      ]),
    },
  })),
  {
    files: pureFolders.map((folder) => `src/${folder}/**/*.ts`),
    ignores: ['src/tenancy/policy-directory.ts'],
    rules: { 'no-restricted-imports': restricted([]) },
  },
  {
    files: ['src/tolerations/**/*.ts'],
    rules: { 'no-restricted-imports': restricted(['../plugins/*']) },
  },
];
