/**
 * The one walk over a cel-js syntax tree. A node is `{ op, args }`; `args` holds its children
 * (nodes, arrays of nodes) mixed with plain values (a function's name, a field name, a literal),
 * so the walk steps into arrays and nodes and passes over everything else. Every analysis of a
 * policy expression (the regular expressions compiled at load, the variables and tenant-written
 * fields it reads, the nesting of its comprehensions) and any translation of one is a visitor.
 *
 * Recursive: the depth is the expression's nesting, which cel-js's parser bounds (its
 * maxAstNodes/nesting limits) and which only the platform team writes.
 */
import type { ASTNode } from '@marcbachmann/cel-js';

/**
 * Calls `enter` on every node of `tree`, parents before children, in source order. When `enter`
 * returns false the node's children are not walked (the visitor has walked what it needs of them
 * itself, with `walkCel` again, or wants none).
 */
export function walkCel(tree: unknown, enter: (node: ASTNode) => boolean): void {
  if (Array.isArray(tree)) {
    for (const item of tree) walkCel(item, enter);
    return;
  }
  if (!isCelNode(tree) || !enter(tree)) return;
  walkCel(tree.args, enter);
}

export function isCelNode(value: unknown): value is ASTNode {
  return value !== null && typeof value === 'object' && 'op' in value && 'args' in value;
}
