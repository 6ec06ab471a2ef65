// Tags of tasks and projects as WebODM keeps them (one text of space-separated tags, shown as a list), and its
// search syntax: words match names, `#tag` (or `:tag`) a project's tag in the project list and a task's tag in
// the task list, `##tag` a task's tag in the project list, `@name` the owner.
import { Type } from '@sinclair/typebox';
import { fieldError } from './errors.ts';

const MAX_TAGS = 100;
const MAX_TAG_LENGTH = 255;

/**
 * Tags as a list, or (multipart and form clients) as the JSON text of one, or as space-separated text. One JSON
 * type list rather than anyOf: the validator's coercion would turn a form's text into a list of one.
 */
export const TagsField = Type.Unsafe<string[] | string>({
  type: ['array', 'string'],
  items: { type: 'string', maxLength: MAX_TAG_LENGTH },
  maxItems: MAX_TAGS,
  maxLength: MAX_TAGS * (MAX_TAG_LENGTH + 1),
  description: 'A list of tags; a tag starting with "." is hidden in the web application',
});

/** The stored text of the tags a client sent: whitespace separates tags, empty ones are dropped. */
export function storedTags(field: string[] | string, name = 'tags'): string {
  let list: unknown = field;
  if (typeof field === 'string') {
    const text = field.trim();
    if (text.startsWith('[')) {
      try {
        list = JSON.parse(text);
      } catch {
        throw fieldError(name, 'Send the tags as a list of strings.');
      }
    } else list = text.split(/\s+/);
  }
  if (!Array.isArray(list) || !list.every((tag) => typeof tag === 'string')) throw fieldError(name, 'Send the tags as a list of strings.');
  const tags = list.flatMap((tag: string) => tag.split(/\s+/)).filter((tag) => tag !== '');
  if (tags.length > MAX_TAGS) throw fieldError(name, `At most ${MAX_TAGS} tags.`);
  return [...new Set(tags)].join(' ');
}

export const shownTags = (stored: string): string[] => stored.split(' ').filter((tag) => tag !== '');

export interface Search {
  /** Words that must each appear in a name (project list: the project's or one of its tasks'). */
  words: string[];
  /** `#tag`: tags of the listed items themselves. */
  tags: string[];
  /** `##tag`: tags of a project's tasks (project list only). */
  taskTags: string[];
  /** `@name`: the owner's user name (project list only). */
  owners: string[];
}

/** WebODM's search text: `:` may stand for `#` (URLs drop what follows a bare `#`). */
export function parseSearch(text: string): Search {
  const search: Search = { words: [], tags: [], taskTags: [], owners: [] };
  for (const term of text.replaceAll(':', '#').split(/\s+/).filter(Boolean)) {
    if (term.startsWith('##')) search.taskTags.push(term.slice(2));
    else if (term.startsWith('#')) search.tags.push(term.slice(1));
    else if (term.startsWith('@')) search.owners.push(term.slice(1));
    else search.words.push(term);
  }
  const nonEmpty = (list: string[]) => list.filter((item) => item !== '');
  return { words: search.words, tags: nonEmpty(search.tags), taskTags: nonEmpty(search.taskTags), owners: nonEmpty(search.owners) };
}

const hasTagOf = (stored: string, tag: string) => {
  const wanted = tag.toLowerCase();
  return shownTags(stored.toLowerCase()).some((item) => item === wanted || item === `.${wanted}`);
};

/** Whether a task matches a search of its project's task list: words in its name, `#tags` (or `##tags`) among its tags. */
export function matchesTask(search: Search, task: { name: string; tags: string }): boolean {
  const name = task.name.toLowerCase();
  return (
    search.words.every((word) => name.includes(word.toLowerCase())) &&
    [...search.tags, ...search.taskTags].every((tag) => hasTagOf(task.tags, tag))
  );
}
