// Project permissions: add, change, delete and view, granted per user and per group. The owner and
// superusers hold all four without rows. Seeing a project takes "view"; a caller who sees a project but
// lacks the permission an action needs gets a 403 (the id is no secret to them), anyone else a 404. Public tasks
// open some reads to everyone (isOpen).
import type { Kysely } from 'kysely';
import { grantsOf } from '../db/projects.ts';
import { type Database, PROJECT_PERMISSIONS, type Project, type ProjectPermission, type Task } from '../db/schema.ts';
import type { Principal } from './auth.ts';
import { permissionDenied } from './errors.ts';

/**
 * WebODM's public link: a public task, or any task of a public project, is read by anyone, signed in or not
 * (the task, its downloads, assets, tiles, thumbnail and 3D scene); its other routes keep the project's rules.
 */
export const isOpen = (task: Pick<Task, 'public'>, project: Pick<Project, 'public'>) => task.public === 1 || project.public === 1;

/** Public with public_edit (on the task or its project): anyone may also save its 3D scene. */
export const isOpenToEdit = (task: Pick<Task, 'public' | 'public_edit'>, project: Pick<Project, 'public' | 'public_edit'>) =>
  (task.public === 1 && task.public_edit === 1) || (project.public === 1 && project.public_edit === 1);

const holdsAll = (user: Principal, project: Project) => user.superuser || project.owner_id === user.id;

/** The user's permissions on each project, in the order add, change, delete, view. */
export async function permissionsOn(
  db: Kysely<Database>,
  user: Principal,
  projects: Project[],
): Promise<Map<number, ProjectPermission[]>> {
  const shared = projects.filter((project) => !holdsAll(user, project)).map((project) => project.id);
  const grants = await grantsOf(db, user.id, shared);
  return new Map(
    projects.map((project) => [
      project.id,
      holdsAll(user, project)
        ? [...PROJECT_PERMISSIONS]
        : PROJECT_PERMISSIONS.filter((permission) => grants.get(project.id)?.has(permission)),
    ]),
  );
}

export async function hasProjectPermission(
  db: Kysely<Database>,
  user: Principal,
  project: Project,
  permission: ProjectPermission,
): Promise<boolean> {
  return (await permissionsOn(db, user, [project])).get(project.id)?.includes(permission) ?? false;
}

/** For a project the user can see: a 403 unless the user holds the permission. */
export async function requireProjectPermission(
  db: Kysely<Database>,
  user: Principal,
  project: Project,
  permission: ProjectPermission,
): Promise<void> {
  if (!(await hasProjectPermission(db, user, project, permission))) throw permissionDenied();
}
