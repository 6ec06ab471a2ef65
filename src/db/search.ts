// The project list's search (WebODM's `search` filter) as SQL: every word in the project's name or one of its
// tasks' names, every `#tag` among the project's tags, every `##tag` among one of its tasks' tags, every `@name`
// the owner. Matching ignores case; a tag also matches its hidden form (".tag").
import { type Expression, type SqlBool, sql } from 'kysely';

const likeEscaped = (text: string) => text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);

/** The stored space-separated tags hold this tag (or ".tag"). */
export function hasTag(column: string, tag: string): Expression<SqlBool> {
  const padded = sql`(' ' || lower(${sql.ref(column)}) || ' ')`;
  const plain = `% ${likeEscaped(tag)} %`;
  const hidden = `% .${likeEscaped(tag)} %`;
  return sql<SqlBool>`(${padded} like ${plain} escape '\\' or ${padded} like ${hidden} escape '\\')`;
}

export function containsText(column: string, word: string): Expression<SqlBool> {
  return sql<SqlBool>`lower(${sql.ref(column)}) like ${`%${likeEscaped(word)}%`} escape '\\'`;
}

const ofProjectTasks = (condition: Expression<SqlBool>) =>
  sql<SqlBool>`exists (select 1 from tasks where tasks.project_id = projects.id and ${condition})`;

export interface ProjectSearch {
  words: string[];
  tags: string[];
  taskTags: string[];
  owners: string[];
}

/** The condition on `projects` rows; true for an empty search. */
export function projectSearch(search: ProjectSearch): Expression<SqlBool> {
  const terms: Expression<SqlBool>[] = [
    ...search.words.map((word) => sql<SqlBool>`(${containsText('projects.name', word)} or ${ofProjectTasks(containsText('tasks.name', word))})`),
    ...search.tags.map((tag) => hasTag('projects.tags', tag)),
    ...search.taskTags.map((tag) => ofProjectTasks(hasTag('tasks.tags', tag))),
    ...search.owners.map(
      (owner) => sql<SqlBool>`exists (select 1 from users where users.id = projects.owner_id and lower(users.username) = ${owner.toLowerCase()})`,
    ),
  ];
  return terms.length === 0 ? sql<SqlBool>`1 = 1` : sql<SqlBool>`(${sql.join(terms, sql` and `)})`;
}
