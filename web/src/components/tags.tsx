// Tags of tasks and projects as WebODM shows them: a tag that starts with "." is hidden; the others are chips.
// Editing takes them as space-separated text, which is how WebODM stores them.
import { useState } from 'preact/hooks';

export const visibleTags = (tags: string[] | undefined) => (tags ?? []).filter((tag) => !tag.startsWith('.'));

export function Tags({ tags, label }: { tags: string[] | undefined; label: string }) {
  const shown = visibleTags(tags);
  if (!shown.length) return null;
  return (
    <ul class="tags" aria-label={label}>
      {shown.map((tag) => (
        <li key={tag} class="tag">
          #{tag}
        </li>
      ))}
    </ul>
  );
}

/** Space-separated text into the list the API takes. */
export const parseTags = (text: string) => text.split(/\s+/).map((tag) => tag.replace(/^#/, '')).filter(Boolean);

/** The tags, shown, with an Edit that turns them into a text field saved by `onSave`. */
export function TagsEditor({ tags, onSave }: { tags: string[]; onSave: (tags: string[]) => Promise<void> }) {
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState('');
  const [error, setError] = useState<string | null>(null);
  if (!editing) {
    return (
      <span class="row">
        {visibleTags(tags).length ? <Tags tags={tags} label="Tags" /> : <span class="muted">none</span>}
        <button type="button" class="link" onClick={() => (setText(tags.join(' ')), setError(null), setEditing(true))}>
          Edit tags
        </button>
      </span>
    );
  }
  const save = async (event: Event) => {
    event.preventDefault();
    try {
      await onSave(parseTags(text));
      setEditing(false);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form class="row" onSubmit={save}>
      <input aria-label="Tags, separated by spaces" value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder="tag another .hidden" autofocus />
      <button type="submit" class="primary">
        Save
      </button>
      <button type="button" onClick={() => setEditing(false)}>
        Cancel
      </button>
      {error && (
        <span role="alert" class="error">
          {error}
        </span>
      )}
    </form>
  );
}
