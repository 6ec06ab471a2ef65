// Reads that clients poll, compiled once. Kysely builds and compiles a query on every run, which for a task list
// costs a large share of the query's time (its two dozen columns are each parsed and frozen anew). Such a
// query is built once per database and shape, with placeholders where its values go; each run puts its own values
// in their place.
import type { Compilable, CompiledQuery, Kysely } from 'kysely';
import type { Database } from './schema.ts';

class Placeholder {
  constructor(readonly name: string) {}
}

/**
 * A query whose SQL depends on `Shape` only (a viewer's being a superuser, a filter's being given), its values
 * being `Values`. `build` must make the query from its arguments alone, the values being placeholders that stand
 * for each run's: a query built from anything else would keep what it saw the first time.
 */
export function compiledQuery<Shape extends Record<string, boolean>, Values extends Record<string, unknown>, Row>(
  build: (db: Kysely<Database>, shape: Shape, values: Values) => Compilable<Row>,
) {
  const compiled = new WeakMap<Kysely<Database>, Map<string, CompiledQuery<Row>>>();
  return async (db: Kysely<Database>, shape: Shape, values: Values): Promise<Row[]> => {
    let byShape = compiled.get(db);
    if (!byShape) compiled.set(db, (byShape = new Map()));
    const key = JSON.stringify(shape);
    let query = byShape.get(key);
    if (!query) {
      const placeholders = Object.fromEntries(Object.keys(values).map((name) => [name, new Placeholder(name)]));
      query = build(db, shape, placeholders as Values).compile();
      byShape.set(key, query);
    }
    const parameters = query.parameters.map((value) => (value instanceof Placeholder ? values[value.name] : value));
    return (await db.executeQuery<Row>({ ...query, parameters })).rows;
  };
}
