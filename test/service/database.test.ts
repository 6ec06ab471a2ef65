// What the database layer does for speed must not show: SQLite rows made from arrays are the rows better-sqlite3
// would give, and a query compiled once answers each run with that run's values.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledQuery } from '../../src/db/compiled.ts';
import { openDatabase } from '../../src/db/connect.ts';
import { migrateToLatest } from '../../src/db/migrations.ts';
import type { Database } from '../../src/db/schema.ts';
import { POSTGRES_URL, isolatedDatabase } from './helpers.ts';

describe('the SQLite connection', () => {
  let dataDir: string;
  let db: Kysely<Database>;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'aeromap-db-'));
    db = openDatabase(undefined, dataDir).db;
  });
  afterAll(async () => {
    await db.destroy();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers rows as objects of their columns: the last of two equal names wins, and new columns show', async () => {
    expect((await sql`select 1 as a, 2 as a, null as b, 'x' as "__proto__"`.execute(db)).rows).toEqual([
      { a: 2, b: null, ['__proto__']: 'x' },
    ]);
    await sql`create table sample (id integer primary key, name text)`.execute(db);
    await sql`insert into sample (name) values ('one'), ('two')`.execute(db);
    const all = () => sql`select * from sample order by id`.execute(db).then((result) => result.rows);
    expect(await all()).toEqual([{ id: 1, name: 'one' }, { id: 2, name: 'two' }]);
    await sql`alter table sample add column size integer default 7`.execute(db);
    expect(await all()).toEqual([{ id: 1, name: 'one', size: 7 }, { id: 2, name: 'two', size: 7 }]);
    expect((await sql`insert into sample (name) values ('three') returning id, name`.execute(db)).rows).toEqual([{ id: 3, name: 'three' }]);
  });

  it('runs a compiled query with the values and the shape of each call', async () => {
    await migrateToLatest(db);
    await db.insertInto('groups').values([{ name: 'a' }, { name: 'b' }, { name: 'c' }]).execute();
    const groups = compiledQuery((db, shape: { byName: boolean }, values: { name: string; above: number }) => {
      const query = db.selectFrom('groups').select('name').where('id', '>', values.above).orderBy('id');
      return shape.byName ? query.where('name', '=', values.name) : query;
    });
    expect(await groups(db, { byName: false }, { name: '', above: 0 })).toEqual([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    expect(await groups(db, { byName: false }, { name: '', above: 2 })).toEqual([{ name: 'c' }]);
    expect(await groups(db, { byName: true }, { name: 'b', above: 0 })).toEqual([{ name: 'b' }]);
    expect(await groups(db, { byName: true }, { name: 'b', above: 2 })).toEqual([]);
  });
});

describe('the PostgreSQL schema of one Aeromap among others', () => {
  let database: Awaited<ReturnType<typeof isolatedDatabase>>;
  let db: Kysely<Database>;
  beforeAll(async () => {
    database = await isolatedDatabase('postgres');
    db = openDatabase(database.databaseUrl, database.dataDir).db;
    await migrateToLatest(db);
  });
  afterAll(async () => {
    await db.destroy();
    await database.drop();
  });

  // Other Aeromaps (and other test files) create and drop their schemas on the same database at any time; a check
  // that reads every schema's tables fails when one goes between its catalog read and its lookups by name.
  it('starts while other schemas on the database come and go', async () => {
    const neighbour = new pg.Client({ connectionString: POSTGRES_URL });
    await neighbour.connect();
    let starting = true;
    const churn = (async () => {
      for (let i = 0; starting; i++) {
        const name = `aeromap_churn_${process.pid}_${i}`;
        await neighbour.query(`create schema ${name}`);
        await neighbour.query(`create table ${name}.t (id serial primary key)`);
        await neighbour.query(`drop schema ${name} cascade`);
      }
    })();
    const applied = () => sql`select name from kysely_migration`.execute(db).then((result) => result.rows.length);
    const before = await applied();
    try {
      for (let start = 0; start < 40; start++) await migrateToLatest(db);
    } finally {
      starting = false;
      await churn;
      await neighbour.end();
    }
    expect(before).toBeGreaterThan(0);
    expect(await applied()).toBe(before);
  });
});
