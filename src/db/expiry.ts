// Uploads never finished: partial tasks created before a cutoff.
import type { Kysely } from 'kysely';
import type { Database, Task } from './schema.ts';

export function stalePartialTasks(db: Kysely<Database>, createdBefore: string): Promise<Pick<Task, 'id' | 'project_id'>[]> {
  return db.selectFrom('tasks').select(['id', 'project_id']).where('partial', '=', 1).where('created_at', '<', createdBefore).execute();
}
