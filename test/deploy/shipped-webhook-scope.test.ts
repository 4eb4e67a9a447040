/**
 * src/api/shipped-webhook-scope.ts (what `explain` calls "not reviewed") says what the shipped
 * webhook configurations select: deploy/base's namespaceSelector, word for word, no
 * objectSelector, and the Helm chart's defaults the same.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { shippedExcludedNamespaces, shippedOptOutLabel } from '../../src/api/shipped-webhook-scope.js';

const root = join(import.meta.dirname, '..', '..');

interface Webhook {
  name: string;
  namespaceSelector?: { matchExpressions?: unknown[]; matchLabels?: unknown };
  objectSelector?: unknown;
  rules?: { scope?: string }[];
}

/** A webhook on cluster-scoped kinds only (NodePools, DeviceTaintRules): no namespace selects it, and explain never asks about it. */
function clusterScoped(webhook: Webhook): boolean {
  return (webhook.rules ?? []).length > 0 && (webhook.rules ?? []).every((rule) => rule.scope === 'Cluster');
}

describe('the shipped webhook scope that explain uses equals deploy/ and the Helm chart', () => {
  for (const file of ['mutating-webhook.yaml', 'validating-webhook.yaml']) {
    it(`deploy/base/${file}: namespaceSelector excludes exactly those namespaces and the opt-out label; no objectSelector`, () => {
      const configurations = parseAllDocuments(readFileSync(join(root, 'deploy', 'base', file), 'utf8')).map(
        (document) => document.toJS() as { webhooks: Webhook[] },
      );
      const all = configurations.flatMap((configuration) => configuration.webhooks);
      for (const webhook of all.filter(clusterScoped)) assert.equal(webhook.namespaceSelector, undefined, webhook.name);
      const webhooks = all.filter((webhook) => !clusterScoped(webhook));
      assert.ok(webhooks.length > 0);
      for (const webhook of webhooks) {
        assert.equal(webhook.objectSelector, undefined, webhook.name);
        assert.equal(webhook.namespaceSelector?.matchLabels, undefined, webhook.name);
        assert.deepEqual(webhook.namespaceSelector?.matchExpressions, [
          { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: shippedExcludedNamespaces },
          { key: shippedOptOutLabel, operator: 'NotIn', values: ['true'] },
        ]);
      }
    });
  }

  it('Helm: the same namespaces with the default values (release namespace tolerator-system) and the same opt-out label', () => {
    const values = parse(readFileSync(join(root, 'deploy', 'helm', 'tolerator', 'values.yaml'), 'utf8')) as {
      webhooks: { excludedNamespaces: unknown[]; optOutLabel: string };
    };
    assert.deepEqual(values.webhooks.excludedNamespaces, []);
    assert.equal(values.webhooks.optOutLabel, shippedOptOutLabel);
    const helpers = readFileSync(join(root, 'deploy', 'helm', 'tolerator', 'templates', '_helpers.tpl'), 'utf8');
    assert.ok(
      helpers.includes('(list "kube-system" "kube-node-lease" .Release.Namespace)'),
      'the chart excludes the same fixed namespaces',
    );
  });
});
