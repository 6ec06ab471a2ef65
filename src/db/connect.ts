// Opens the database: the SQLite file DATA_DIR/aeromap.sqlite3 by default, PostgreSQL for a postgres:// URL.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
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
  return new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
}

function openPostgres(connectionString: string): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString,
    max: 10,
    // count(*) and bigint columns come back as numbers, as they do from SQLite; they stay far below 2^53.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** A postgres:// URL selects PostgreSQL (its `options` parameter may set a search_path); otherwise SQLite. */
export function openDatabase(databaseUrl: string | undefined, dataDir: string): DatabaseHandle {
  if (databaseUrl) return { db: openPostgres(databaseUrl), dialect: 'postgres' };
  return { db: openSqlite(dataDir), dialect: 'sqlite' };
}
