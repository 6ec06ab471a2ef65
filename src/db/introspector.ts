// What Kysely's migrator learns of the database on PostgreSQL, confined to the connection's own schema.
import { type DatabaseIntrospector, type Kysely, PostgresDialect, type TableMetadata, sql } from 'kysely';

/**
 * The migrator asks only whether its bookkeeping tables and their schema exist. Kysely's own PostgreSQL
 * introspector reads every schema on the database and then looks each up by name, so that a schema another
 * Aeromap (or anything else) drops in between fails the service's start with `schema "…" does not exist`; this
 * one reads the current schema's relations by their catalog rows alone. Columns are left out: nothing here asks.
 */
class OwnSchemaIntrospector implements DatabaseIntrospector {
  constructor(private readonly db: Kysely<unknown>) {}

  async getSchemas() {
    const { rows } = await sql<{ name: string | null }>`select current_schema() as name`.execute(this.db);
    return rows.flatMap(({ name }) => (name === null ? [] : [{ name }]));
  }

  async getTables(): Promise<TableMetadata[]> {
    const { rows } = await sql<{ name: string; schema: string; kind: string }>`
      select c.relname as name, n.nspname as schema, c.relkind as kind
      from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'p', 'v', 'm')
      order by c.relname`.execute(this.db);
    return rows.map(({ name, schema, kind }) => ({ name, schema, isView: kind === 'v' || kind === 'm', columns: [] }));
  }

  async getMetadata() {
    return { tables: await this.getTables() };
  }
}

export class OwnSchemaPostgresDialect extends PostgresDialect {
  override createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new OwnSchemaIntrospector(db);
  }
}
