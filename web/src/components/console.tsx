// The task's console, fetched a piece at a time (only the lines after those already shown) while the task can
// still write to it. Long consoles froze WebODM's page: only the last MAX_LINES are kept in the page.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, taskPath } from '../api.ts';

const MAX_LINES = 2000;
const POLL_MS = 2000;

export function Console({ projectId, taskId, live }: { projectId: number; taskId: number; live: boolean }) {
  const [lines, setLines] = useState<string[]>([]);
  const [dropped, setDropped] = useState(0);
  const next = useRef(0);
  const box = useRef<HTMLPreElement>(null);
  const follow = useRef(true);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const fetchMore = async () => {
      try {
        const text = await api<string>(`${taskPath(projectId, taskId)}/output/?line=${next.current}`);
        const fresh = typeof text === 'string' && text !== '' ? text.split('\n') : [];
        if (!stopped && fresh.length) {
          next.current += fresh.length;
          setLines((current) => {
            const all = current.concat(fresh);
            if (all.length <= MAX_LINES) return all;
            setDropped((d) => d + all.length - MAX_LINES);
            return all.slice(all.length - MAX_LINES);
          });
        }
      } catch {
        // A missed poll is made up by the next one.
      }
      if (!stopped && live) timer = setTimeout(fetchMore, POLL_MS);
    };
    void fetchMore();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [projectId, taskId, live]);

  useEffect(() => {
    const el = box.current;
    if (el && follow.current) el.scrollTop = el.scrollHeight;
  }, [lines]);

  return (
    <div class="console-wrap">
      {dropped > 0 && <p class="muted">The first {dropped} lines are not shown; download the console for all of it.</p>}
      <pre
        ref={box}
        class="console"
        tabIndex={0}
        aria-label="Console"
        data-testid="console"
        onScroll={(e) => {
          const el = e.currentTarget;
          follow.current = el.scrollHeight - el.scrollTop - el.clientHeight < 30;
        }}
      >
        {lines.join('\n')}
      </pre>
    </div>
  );
}
