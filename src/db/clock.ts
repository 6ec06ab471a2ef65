// The database's clock, read inside the query: service instances on one database may disagree about the time,
// so what they share (when a lease ends, when a task is due) is measured on the one clock they all see.
import { type Kysely, PostgresAdapter, type RawBuilder, sql } from 'kysely';

export const isPostgres = (db: Kysely<any>) => db.getExecutor().adapter instanceof PostgresAdapter;

/** The database's time `offsetMs` from now, as ISO 8601 UTC text with milliseconds (the schema's Timestamp). */
export function databaseTime(db: Kysely<any>, offsetMs = 0): RawBuilder<string> {
  if (isPostgres(db)) {
    return sql<string>`to_char((now() at time zone 'UTC') + ${offsetMs} * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
  }
  return sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ${`${offsetMs / 1000} seconds`})`;
}
