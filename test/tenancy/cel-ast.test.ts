import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Environment, type ASTNode } from '@marcbachmann/cel-js';
import { walkCel } from '../../src/tenancy/cel-ast.js';

const parse = (source: string): ASTNode => new Environment({ unlistedVariablesAreDyn: true }).parse(source).ast;

describe('walkCel, the one walk over a CEL syntax tree', () => {
  it('visits every node, parents before children, in source order', () => {
    const ids: string[] = [];
    walkCel(parse('a + b.c[d] - f(e)'), (node) => {
      if (node.op === 'id') ids.push(node.args);
      return true;
    });
    assert.deepEqual(ids, ['a', 'b', 'd', 'e']);
  });

  it("does not walk a node's children when the visitor returns false", () => {
    const ids: string[] = [];
    walkCel(parse('x.all(i, i > y) && z'), (node) => {
      if (node.op === 'id') ids.push(node.args);
      return !(node.op === 'rcall' && node.args[0] === 'all');
    });
    assert.deepEqual(ids, ['z']);
  });
});
