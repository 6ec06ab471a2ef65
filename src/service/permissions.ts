// Project permissions: add, change, delete and view, granted per user and per group. The owner and
// superusers hold all four without rows. Seeing a project takes "view"; a caller who sees a project but
// lacks the permission an action needs gets a 403 (the id is no secret to them), anyone else a 404.
import type { Kysely } from 'kysely';
import { grantsOf } from '../db/projects.ts';
import { type Database, PROJECT_PERMISSIONS, type Project, type ProjectPermission } from '../db/schema.ts';
import type { Principal } from './auth.ts';
import { permissionDenied } from './errors.ts';

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
