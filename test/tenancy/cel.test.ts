import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ExpressionEvaluationError, compileExpression, positionOf, toCelValue, toCelVariables } from '../../src/tenancy/cel.js';
import type { ExpressionResultType } from '../../src/tenancy/cel.js';

const variables = toCelVariables({
  object: {
    metadata: { name: 'app', labels: { tier: 'web' } },
    spec: { replicas: 3, ratio: 0.5, containers: [{ name: 'a' }, { name: 'b' }] },
  },
  oldObject: undefined,
  namespaceObject: { metadata: { name: 'team-a-dev', labels: { dedicated: 'gpu' } } },
  request: { operation: 'CREATE' },
});

describe('compileExpression and evaluate', () => {
  const rows: { name: string; given: { source: string; type: ExpressionResultType }; want: unknown }[] = [
    {
      name: 'optional field access with orValue reads a present label',
      given: { source: "namespaceObject.metadata.?labels['dedicated'].orValue('')", type: 'string' },
      want: 'gpu',
    },
    {
      name: 'optional field access with orValue falls back for an absent label',
      given: { source: "object.metadata.?labels['dedicated'].orValue('')", type: 'string' },
      want: '',
    },
    {
      name: 'a JSON integer is a CEL int, so int arithmetic works on it',
      given: { source: 'object.spec.replicas + 1 == 4', type: 'bool' },
      want: true,
    },
    { name: 'a JSON fraction stays a CEL double', given: { source: 'object.spec.ratio == 0.5', type: 'bool' }, want: true },
    { name: 'oldObject is null on CREATE', given: { source: 'oldObject == null', type: 'bool' }, want: true },
    {
      name: 'string functions of Kubernetes CEL are available',
      given: { source: "namespaceObject.metadata.name.split('-')[1]", type: 'string' },
      want: 'a',
    },
    {
      name: 'a single comprehension is allowed',
      given: { source: "object.spec.containers.exists(c, c.name == 'b')", type: 'bool' },
      want: true,
    },
    {
      name: 'chained comprehensions do not count as nested',
      given: { source: "object.spec.containers.map(c, c.name).filter(n, n != '').all(n, n != 'x')", type: 'bool' },
      want: true,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const compiled = compileExpression(row.given.source, row.given.type);
      assert.equal(compiled.error, undefined);
      assert.equal(compiled.expression.evaluate(variables), row.want);
    });
  }
});

describe('compile errors carry the position inside the expression', () => {
  const rows: {
    name: string;
    given: { source: string; type: ExpressionResultType };
    want: { message: RegExp; line: number; column: number };
  }[] = [
    {
      name: 'a syntax error points at the unexpected end',
      given: { source: 'namespaceObject.metadata.name + ', type: 'string' },
      want: { message: /Unexpected token/, line: 1, column: 33 },
    },
    {
      name: 'a syntax error on the second line gives line 2',
      given: { source: "namespaceObject.metadata.name ==\n  'a' &&", type: 'bool' },
      want: { message: /Unexpected token/, line: 2, column: 9 },
    },
    {
      name: 'an undeclared variable is a type error at its position',
      given: { source: "'x' + ns.metadata.name", type: 'string' },
      want: { message: /Unknown variable: ns/, line: 1, column: 7 },
    },
    {
      name: 'an operator without an overload is a type error',
      given: { source: "1 + 'a'", type: 'string' },
      want: { message: /no such overload/, line: 1, column: 1 },
    },
    {
      name: 'a bool where a string is wanted is rejected at compile time',
      given: { source: "namespaceObject.metadata.name == 'a'", type: 'string' },
      want: { message: /must evaluate to string, but its type is bool/, line: 1, column: 1 },
    },
    {
      name: 'a string where a bool is wanted is rejected at compile time',
      given: { source: "'true'", type: 'bool' },
      want: { message: /must evaluate to bool, but its type is string/, line: 1, column: 1 },
    },
    {
      name: 'an optional left without orValue is rejected at compile time',
      given: { source: "namespaceObject.metadata.?labels['a']", type: 'string' },
      want: { message: /its type is optional/, line: 1, column: 1 },
    },
    {
      name: 'comprehensions nested two deep are rejected to keep the cost linear in the request',
      given: { source: 'object.a.all(x, object.b.all(y, x == y))', type: 'bool' },
      want: { message: /nest 2 deep; at most 1 is allowed/, line: 1, column: 17 },
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const compiled = compileExpression(row.given.source, row.given.type);
      assert.match(compiled.error?.message ?? '', row.want.message);
      assert.deepEqual(
        { line: compiled.error?.position?.line, column: compiled.error?.position?.column },
        { line: row.want.line, column: row.want.column },
      );
    });
  }

  it('a very large expression is refused by the AST node limit', () => {
    const source = Array.from({ length: 600 }, () => "namespaceObject.metadata.name == 'x'").join(' || ');
    assert.match(compileExpression(source, 'bool').error?.message ?? '', /maxAstNodes/);
  });
});

describe('evaluation failures are "could not decide"', () => {
  const rows: { name: string; given: { source: string; type: ExpressionResultType }; want: RegExp }[] = [
    {
      name: 'a dyn result of the wrong type throws',
      given: { source: 'object.spec.replicas', type: 'string' },
      want: /must evaluate to string, got int 3/,
    },
    {
      name: 'a missing key without ? throws',
      given: { source: "namespaceObject.metadata.annotations['a']", type: 'string' },
      want: /No such key: annotations/,
    },
    {
      name: 'a failing conversion throws',
      given: { source: 'int(namespaceObject.metadata.name) > 0', type: 'bool' },
      want: /cannot convert to int \(line 1, column 1\)/,
    },
  ];
  for (const row of rows) {
    it(row.name, () => {
      const compiled = compileExpression(row.given.source, row.given.type);
      assert.equal(compiled.error, undefined);
      assert.throws(
        () => compiled.expression.evaluate(variables),
        (error: unknown) => error instanceof ExpressionEvaluationError && row.want.test(error.message),
      );
    });
  }
});

describe('toCelValue', () => {
  const rows: { name: string; given: unknown; want: unknown }[] = [
    { name: 'integers become BigInt at every depth', given: { a: 1, b: [2, { c: 3 }] }, want: { a: 1n, b: [2n, { c: 3n }] } },
    { name: 'fractions stay numbers', given: { a: 1.5 }, want: { a: 1.5 } },
    { name: 'undefined becomes null at the top and is dropped inside objects', given: { a: undefined, b: 'x' }, want: { b: 'x' } },
    { name: 'strings, booleans and null pass through', given: ['1', true, null], want: ['1', true, null] },
  ];
  for (const row of rows) {
    it(row.name, () => {
      assert.deepEqual(toCelValue(row.given), row.want);
    });
  }

  it('never modifies its input', () => {
    const input = { a: 1, b: [2] };
    toCelValue(input);
    assert.deepEqual(input, { a: 1, b: [2] });
  });
});

describe('positionOf', () => {
  it('counts lines and columns from 1', () => {
    assert.deepEqual(positionOf('ab\ncd', 4), { offset: 4, line: 2, column: 2 });
  });
});

describe('variables are converted as far as an expression reads them', () => {
  it('an object field is converted when first read, and stays converted', () => {
    const shell = toCelValue({ metadata: { name: 'a' }, spec: { nested: { deep: 1 } } }) as Record<string, unknown>;
    assert.equal(typeof Object.getOwnPropertyDescriptor(shell, 'spec')?.get, 'function', 'not converted before it is read');
    assert.equal((shell.spec as { nested: { deep: bigint } }).nested.deep, 1n, 'a nested integer is a BigInt when read');
    assert.ok(Object.getOwnPropertyDescriptor(shell, 'spec')?.get === undefined, 'converted once, then a plain value');
  });

  it('an expression that reads only metadata gives the same answer through the lazy shells', () => {
    const compiled = compileExpression("object.metadata.?labels['team'].orValue('') + string(size(object.spec.containers))", 'string');
    assert.ok(compiled.expression !== undefined);
    const object = { metadata: { labels: { team: 'a' } }, spec: { containers: [{ name: 'x' }, { name: 'y' }] } };
    assert.equal(
      compiled.expression.evaluate(toCelVariables({ object, oldObject: undefined, namespaceObject: undefined, request: {} })),
      'a2',
    );
  });

  it('a key named __proto__ stays a plain key of the converted map', () => {
    const shell = toCelValue(JSON.parse('{"__proto__": {"x": 1}}')) as Record<string, unknown>;
    assert.ok(Object.hasOwn(shell, '__proto__'));
    assert.equal(Object.getPrototypeOf(shell), Object.prototype);
  });

  it('knows which admission variables an expression reads', () => {
    const compiled = compileExpression("namespaceObject.metadata.name == 'a' && request.operation == 'CREATE'", 'bool');
    assert.deepEqual([...(compiled.expression?.variables ?? [])].sort(), ['namespaceObject', 'request']);
  });
});
