// Processing nodes: the address an admin entered, and what the last refresh learnt from the node.
import type { Kysely } from 'kysely';
import { type Database, type ProcessingNode, type ProcessingNodeUpdate, defined, now } from './schema.ts';

export function allNodes(db: Kysely<Database>) {
  return db.selectFrom('processing_nodes').selectAll('processing_nodes');
}

export function findNode(db: Kysely<Database>, id: number): Promise<ProcessingNode | undefined> {
  return allNodes(db).where('id', '=', id).executeTakeFirst();
}

export async function insertNode(
  db: Kysely<Database>,
  node: { hostname: string; port: number; token: string },
): Promise<number> {
  const row = await db
    .insertInto('processing_nodes')
    .values({ ...node, created_at: now() })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function updateNode(db: Kysely<Database>, id: number, changes: ProcessingNodeUpdate): Promise<void> {
  const set = defined(changes);
  if (Object.keys(set).length) await db.updateTable('processing_nodes').set(set).where('id', '=', id).execute();
}

export async function deleteNode(db: Kysely<Database>, id: number): Promise<void> {
  await db.deleteFrom('processing_nodes').where('id', '=', id).execute();
}

