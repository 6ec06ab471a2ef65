// Opens the database: the SQLite file DATA_DIR/aeromap.sqlite3 by default, PostgreSQL for a postgres:// URL.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import pg from 'pg';
import { OwnSchemaPostgresDialect } from './introspector.ts';
import type { Database } from './schema.ts';

export type DialectName = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: DialectName;
}

export const SQLITE_FILE = 'aeromap.sqlite3';
const INT8_OID = 20;

function openSqlite(dataDir: string): Kysely<Database> {
  mkdirSync(dataDir, { recursive: true });
  const database = new SqliteDatabase(path.join(dataDir, SQLITE_FILE));
  // WAL lets readers (another CLI command, a backup) work while the service writes.
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma('busy_timeout = 5000');
  return new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(database) }) });
}

const CACHED_STATEMENTS = 256;

/** What Kysely's SQLite driver uses of a statement. */
type DriverStatement = Pick<SqliteDatabase.Statement, 'reader' | 'all' | 'run' | 'iterate'>;

type RowBuilder = ((values: unknown[]) => Record<string, unknown>) & { width: number };

/**
 * A function that makes a row's values the object literal of a statement's columns. V8 makes literals of one
 * shape fastest; setting properties by name in a loop (as both drivers do) goes through its slow generic path
 * once rows of many statements pass the same code. The names are quoted (JSON), as computed keys, so that no
 * name is code.
 */
function rowBuilder(names: string[]): RowBuilder {
  const properties = names.map((name, i) => `[${JSON.stringify(name)}]: values[${i}]`);
  const build = new Function('values', `return { ${properties.join(', ')} };`) as RowBuilder;
  build.width = names.length;
  return build;
}

/**
 * A reading statement whose rows better-sqlite3 hands over as arrays, made into objects here: better-sqlite3
 * builds an object row a property at a time through V8's API, which for rows as wide as a task list's is a large
 * part of the read. Duplicate names keep the last value, as better-sqlite3's own objects do. The names are read again
 * should a schema change (by another process) alter the width of a `select *`.
 */
function objectRows(statement: SqliteDatabase.Statement): DriverStatement {
  const arrays = statement.raw(true);
  const columns = () => rowBuilder(arrays.columns().map((column) => column.name));
  let toObject = columns();
  const objects = (rows: unknown[][]) => {
    if (rows.length > 0 && rows[0].length !== toObject.width) toObject = columns();
    return rows.map(toObject);
  };
  return {
    reader: true,
    all: (...parameters: unknown[]) => objects(arrays.all(...parameters) as unknown[][]),
    run: (...parameters: unknown[]) => arrays.run(...parameters),
    *iterate(...parameters: unknown[]) {
      for (const values of arrays.iterate(...parameters)) yield objects([values as unknown[]])[0];
    },
  } as DriverStatement;
}

const SCHEMA_CHANGE = /^\s*(create|alter|drop)\b/i;

/**
 * Kysely prepares every query anew, which costs SQLite more than running a small one: the same few queries
 * serve every request, so their prepared statements are kept (Kysely runs one query at a time on SQLite, so a
 * statement is never in use twice).
 */
function withStatementCache(database: SqliteDatabase.Database) {
  const statements = new Map<string, DriverStatement>();
  return {
    close: () => database.close(),
    prepare(sql: string) {
      // A statement kept from before a schema change would keep the old column names.
      if (SCHEMA_CHANGE.test(sql)) statements.clear();
      let statement = statements.get(sql);
      if (!statement) {
        const prepared = database.prepare(sql);
        statement = prepared.reader ? objectRows(prepared) : prepared;
        if (statements.size >= CACHED_STATEMENTS) statements.delete(statements.keys().next().value as string);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

const PREPARED_PER_CONNECTION = 512;
const DATA_QUERY = /^\s*(select|insert|update|delete|with)\b/i;

/**
 * A client that has PostgreSQL prepare each query text once per connection (a named statement) and reuses it,
 * so that the few queries every request makes skip parsing and planning. Schema changes and transaction control
 * run unnamed, as do texts beyond the cap. Rows of named statements come as arrays, made objects by the
 * statement's row builder (as on SQLite: pg builds an object a property at a time).
 */
class PreparingClient extends pg.Client {
  private readonly names = new Map<string, string>();
  private readonly builders = new Map<string, RowBuilder>();

  override query(...args: unknown[]): never {
    const [text, values] = args;
    if (typeof text === 'string' && Array.isArray(values) && args.length === 2 && DATA_QUERY.test(text)) {
      let name = this.names.get(text);
      if (!name && this.names.size < PREPARED_PER_CONNECTION) {
        name = `aeromap_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
        this.names.set(text, name);
      }
      if (name) return this.namedQuery(name, text, values) as never;
    }
    return (super.query as unknown as (...rest: unknown[]) => never)(...args);
  }

  private async namedQuery(name: string, text: string, values: unknown[]): Promise<pg.QueryResult> {
    const run = super.query as unknown as (config: pg.QueryArrayConfig) => Promise<pg.QueryArrayResult>;
    const result = await run.call(this, { name, text, values, rowMode: 'array' });
    let toObject = this.builders.get(name);
    // A statement's columns change only with the schema (a `select *` after a migration).
    if (!toObject || toObject.width !== result.fields.length) {
      toObject = rowBuilder(result.fields.map((field) => field.name));
      this.builders.set(name, toObject);
    }
    return Object.assign(result, { rows: result.rows.map(toObject) }) as unknown as pg.QueryResult;
  }
}

function openPostgres(connectionString: string): Kysely<Database> {
  const pool = new pg.Pool({
    Client: PreparingClient,
    connectionString,
    max: 10,
    // count(*) and bigint columns come back as numbers, as they do from SQLite; they stay far below 2^53.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  return new Kysely<Database>({ dialect: new OwnSchemaPostgresDialect({ pool }) });
}

/** A postgres:// URL selects PostgreSQL (its `options` parameter may set a search_path); otherwise SQLite. */
export function openDatabase(databaseUrl: string | undefined, dataDir: string): DatabaseHandle {
  if (databaseUrl) return { db: openPostgres(databaseUrl), dialect: 'postgres' };
  return { db: openSqlite(dataDir), dialect: 'sqlite' };
}
