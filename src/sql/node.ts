// Typed access to libpg-query's parse tree (its JSON AST, typed by @pgsql/types, whose major version, 18, is
// libpg-query's and pgsql-deparser's): a node is a wrapper object of one key, its kind ({"A_Expr": {...}}), whose
// value is the node's body; these name the kinds and bodies and read a node as one kind.

import type { Node } from '@pgsql/types';

/** A node's kind: the one key of its wrapper object ({"A_Expr": {...}}). */
export type NodeKind = Node extends infer U ? (U extends unknown ? keyof U : never) : never;
/** The body of a node of kind K (A_Expr for "A_Expr"). */
export type NodeBody<K extends NodeKind> = Extract<Node, Record<K, unknown>>[K];
/** A node's kind with its body: a union of pairs, so that a switch on the kind narrows the body. */
export type KindAndBody = { [K in NodeKind]: [K, NodeBody<K>] }[NodeKind];

/** The body of `node` if it is of kind `kind`, else undefined (`node?.[kind]` on the untyped tree). */
export function bodyOf<K extends NodeKind>(node: Node | null | undefined, kind: K): NodeBody<K> | undefined {
  return (node as { [k in K]?: NodeBody<K> } | null | undefined)?.[kind];
}
