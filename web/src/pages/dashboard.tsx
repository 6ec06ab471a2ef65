// The projects the user sees, with their tasks: search (WebODM's syntax, by the API), create, edit (tags too),
// share, delete, a new task, and the import of results or of a task's backup.
import { useEffect, useState } from 'preact/hooks';
import { type Project, type Task, api, listAll } from '../api.ts';
import { Confirm } from '../components/confirm.tsx';
import { FormModal } from '../components/form-modal.tsx';
import { ImportForm } from '../components/import-form.tsx';
import { NewTask } from '../components/new-task.tsx';
import { ShareDialog } from '../components/share-dialog.tsx';
import { Tags, parseTags } from '../components/tags.tsx';
import { TaskRow } from '../components/task-row.tsx';
import { isActive } from '../format.ts';
import { type PendingUpload, pendingUploads } from '../upload.ts';

const POLL_MS = 3000;
/** The pause after the last key before the search is sent. */
const SEARCH_DELAY_MS = 300;

export function Dashboard() {
  const [projects, setProjects] = useState<Project[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [creating, setCreating] = useState(false);

  const term = search.trim();
  const load = () =>
    listAll<Project>(`/api/projects/?ordering=-created_at${term ? `&search=${encodeURIComponent(term)}` : ''}`).then(setProjects, (e: Error) =>
      setError(e.message),
    );
  useEffect(() => {
    const timer = setTimeout(load, term ? SEARCH_DELAY_MS : 0);
    return () => clearTimeout(timer);
  }, [term]);

  const shown = projects ?? [];
  return (
    <div class="page">
      <div class="toolbar">
        <h1 class="grow">Projects</h1>
        <input
          type="search"
          aria-label="Search projects"
          title="Words in project or task names; #tag a project tag, ##tag a task tag, @user an owner"
          placeholder="Search, #tag, @owner"
          value={search}
          onInput={(e) => setSearch(e.currentTarget.value)}
        />
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          New project
        </button>
      </div>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {projects === null && !error && <p class="muted">Loading…</p>}
      {projects !== null && projects.length === 0 && !term && <p>No project yet. Create one, then add a task with your photographs.</p>}
      {projects !== null && projects.length === 0 && term && <p>No project matches “{search}”.</p>}
      {shown.map((project) => (
        <ProjectCard key={project.id} project={project} onChanged={load} />
      ))}
      {creating && (
        <ProjectForm
          title="New project"
          onClose={() => setCreating(false)}
          onSave={async (body) => {
            await api('/api/projects/', { method: 'POST', body });
            await load();
          }}
        />
      )}
    </div>
  );
}

type ProjectBody = { name: string; description: string; tags: string[] };

function ProjectForm({ title, project, onSave, onClose }: { title: string; project?: Project; onSave: (body: ProjectBody) => Promise<void>; onClose: () => void }) {
  const [name, setName] = useState(project?.name ?? '');
  const [description, setDescription] = useState(project?.description ?? '');
  const [tags, setTags] = useState((project?.tags ?? []).join(' '));
  return (
    <FormModal title={title} onSave={() => onSave({ name, description, tags: parseTags(tags) })} onClose={onClose}>
      <label>
        Name
        <input name="name" required maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} autofocus />
      </label>
      <label>
        Description
        <textarea name="description" rows={3} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <label>
        Tags <span class="muted">(separated by spaces; one starting with “.” is hidden)</span>
        <input name="tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
      </label>
    </FormModal>
  );
}

function ProjectCard({ project, onChanged }: { project: Project; onChanged: () => Promise<unknown> }) {
  const [tasks, setTasks] = useState<Task[] | null>(null);
  const [dialog, setDialog] = useState<'rename' | 'share' | 'delete' | 'import' | null>(null);
  const [adding, setAdding] = useState(false);
  const [resume, setResume] = useState<PendingUpload | undefined>(() => pendingUploads().find((u) => u.projectId === project.id));
  const [error, setError] = useState<string | null>(null);
  const can = (permission: string) => project.permissions.includes(permission);

  const loadTasks = () => api<Task[]>(`/api/projects/${project.id}/tasks/`).then(setTasks, (e: Error) => setError(e.message));
  useEffect(() => {
    void loadTasks();
  }, [project.id]);
  // Tasks that can still change are polled; the others are left alone.
  useEffect(() => {
    if (!tasks?.some(isActive)) return;
    const timer = setTimeout(loadTasks, POLL_MS);
    return () => clearTimeout(timer);
  }, [tasks]);

  const mappable = (tasks ?? []).some((t) => t.available_assets.some((a) => /^(orthophoto|dsm|dtm)\.tif$/.test(a)));
  return (
    <article class="panel project" aria-labelledby={`project-${project.id}`}>
      <div class="toolbar">
        <div class="grow">
          <h2 id={`project-${project.id}`}>{project.name}</h2>
          {project.description && <p class="muted">{project.description}</p>}
          <Tags tags={project.tags} label={`Tags of ${project.name}`} />
        </div>
        {can('add') && (
          <button type="button" class="primary" onClick={() => setAdding(true)} disabled={adding}>
            New task
          </button>
        )}
        {can('change') && (
          <button type="button" onClick={() => setDialog('import')}>
            Import
          </button>
        )}
        {mappable && (
          <a class="button" href={`/map/project/${project.id}/`}>
            Map
          </a>
        )}
        {can('change') && (
          <button type="button" onClick={() => setDialog('rename')}>
            Edit
          </button>
        )}
        {can('change') && (
          <button type="button" onClick={() => setDialog('share')}>
            Share
          </button>
        )}
        {can('delete') && (
          <button type="button" class="danger" onClick={() => setDialog('delete')}>
            Delete
          </button>
        )}
      </div>
      {resume && !adding && (
        <p class="notice">
          The upload of “{resume.taskName}” was interrupted ({resume.done.length} of {resume.total} files sent).{' '}
          <button type="button" class="link" onClick={() => setAdding(true)}>
            Resume it
          </button>
        </p>
      )}
      {adding && (
        <NewTask
          projectId={project.id}
          resume={resume}
          onDone={() => {
            setAdding(false);
            setResume(undefined);
            void loadTasks();
          }}
          onCancel={() => {
            setAdding(false);
            setResume(pendingUploads().find((u) => u.projectId === project.id));
            void loadTasks();
          }}
        />
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {tasks && tasks.length > 0 && (
        <ul class="task-list" aria-label={`Tasks of ${project.name}`}>
          {tasks.map((task) => (
            <TaskRow key={task.id} task={task} />
          ))}
        </ul>
      )}
      {tasks && tasks.length === 0 && !adding && <p class="muted">No task yet.</p>}
      {dialog === 'rename' && (
        <ProjectForm
          title="Edit project"
          project={project}
          onClose={() => setDialog(null)}
          onSave={async (body) => {
            await api(`/api/projects/${project.id}/`, { method: 'PATCH', body });
            await onChanged();
          }}
        />
      )}
      {dialog === 'share' && <ShareDialog project={project} onClose={() => setDialog(null)} />}
      {dialog === 'import' && <ImportForm projectId={project.id} onClose={() => setDialog(null)} onDone={loadTasks} />}
      {dialog === 'delete' && (
        <Confirm
          title="Delete project"
          message={`Delete “${project.name}” with its ${tasks?.length ?? 0} tasks and all their files? This cannot be undone.`}
          action="Delete project"
          onCancel={() => setDialog(null)}
          onConfirm={async () => {
            setDialog(null);
            try {
              await api(`/api/projects/${project.id}/`, { method: 'DELETE' });
              await onChanged();
            } catch (err) {
              setError((err as Error).message);
            }
          }}
        />
      )}
    </article>
  );
}
