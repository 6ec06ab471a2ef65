import { type Task, taskPath } from '../api.ts';
import { duration, isActive, statusClass, statusText } from '../format.ts';
import { Tags } from './tags.tsx';

/** A task in its project's list: its orthophoto in small, name, tags, photographs, state with its progress, time,
 * and a link to its page. */
export function TaskRow({ task }: { task: Task }) {
  const progress = task.upload_progress < 1 && task.partial ? task.upload_progress : task.running_progress;
  const thumbnail = task.available_assets.includes('orthophoto.tif');
  return (
    <li class="task-row">
      {thumbnail ? (
        <img class="task-thumb" src={`${taskPath(task.project, task.id)}/thumbnail?size=96`} width={48} height={48} alt="" loading="lazy" data-testid="task-thumbnail" />
      ) : (
        <span class="task-thumb empty" aria-hidden="true" />
      )}
      <a href={`/project/${task.project}/task/${task.id}/`} class="task-name">
        {task.name || `Task #${task.id}`}
      </a>
      <Tags tags={task.tags} label={`Tags of ${task.name}`} />
      <span class="muted">{task.images_count} photographs</span>
      <span class={`badge ${statusClass(task)}`}>{statusText(task)}</span>
      {isActive(task) && task.status === 20 && <progress max={1} value={progress} aria-label={`Progress of ${task.name}`} />}
      <span class="muted">{task.processing_time > 0 ? duration(task.processing_time) : ''}</span>
    </li>
  );
}
