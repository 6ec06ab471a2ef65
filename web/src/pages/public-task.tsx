// A public task seen by anyone, signed in or not: its map or its 3D view at WebODM's addresses
// (/public/task/{id}/map/, /public/task/{id}/3d/), and the same without the header at /public/task/{id}/iframe/...
// for embedding in other sites. The task comes from /public/task/{id}/json/; the map and the 3D view then read its
// layers and point cloud through the API's routes that public tasks open to everyone.
import { useEffect, useState } from 'preact/hooks';
import { lazy } from 'preact-iso';
import { type Task, publicPagePath } from '../api.ts';

const MapPage = lazy(() => import('../map/map-page.tsx'));
const ModelPage = lazy(() => import('../viewer3d/model-page.tsx'));

export type PublicView = 'map' | '3d';

/** The view and framing a public address names, or null when it is not one of a public task's pages. */
export function parsePublicPath(pathname: string): { tid: string; view: PublicView; embedded: boolean } | null {
  const match = /^\/public\/task\/(\d{1,10})\/(iframe\/)?(map|3d)\/?$/.exec(pathname);
  return match ? { tid: match[1], embedded: match[2] !== undefined, view: match[3] as PublicView } : null;
}

export function PublicTaskPage({ tid, view, embedded }: { tid: string; view: PublicView; embedded: boolean }) {
  const [task, setTask] = useState<Task | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

  useEffect(() => {
    let current = true;
    fetch(`/public/task/${tid}/json/`, { headers: { Accept: 'application/json' } })
      .then(async (response) => {
        if (!response.ok) throw new Error(response.status === 404 ? 'This task is not public, or does not exist.' : `The server answered ${response.status}.`);
        return (await response.json()) as Task;
      })
      .then((found) => current && setTask(found), (error: Error) => current && setFailure(error.message));
    return () => {
      current = false;
    };
  }, [tid]);

  useEffect(() => {
    if (task) document.title = `${task.name || `Task #${task.id}`} · Aeromap`;
  }, [task]);

  const hasMap = task?.available_assets.some((asset) => /^(orthophoto|dsm|dtm)\.tif$/.test(asset)) ?? false;
  const hasCloud = task?.available_assets.includes('georeferenced_model.laz') ?? false;
  return (
    <>
      {!embedded && (
        <header class="app-header">
          <a class="brand" href="/">
            Aeromap
          </a>
          <nav aria-label="Views">
            {task && <span class="user">{task.name || `Task #${task.id}`}</span>}
            {hasMap && view !== 'map' && <a href={publicPagePath(Number(tid), 'map')}>Map</a>}
            {hasCloud && view !== '3d' && <a href={publicPagePath(Number(tid), '3d')}>3D view</a>}
          </nav>
        </header>
      )}
      <main id="main">
        {failure && (
          <div class="page">
            <p role="alert" class="error">
              {failure}
            </p>
          </div>
        )}
        {!failure && !task && <div class="page muted">Loading…</div>}
        {task && view === 'map' && <MapPage pid={String(task.project)} tid={tid} />}
        {task && view === '3d' && <ModelPage pid={String(task.project)} tid={tid} links={hasMap ? [{ label: 'Map', href: publicPagePath(task.id, 'map', embedded) }] : []} />}
      </main>
    </>
  );
}
