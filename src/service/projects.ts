// Projects: CRUD at /api/projects/, sharing at /api/projects/{id}/permissions/ and /api/projects/{id}/edit/.
import { rm } from 'node:fs/promises';
import { type Static, Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import { findGroupByName } from '../db/groups.ts';
import { markProjectsDeleting, tasksOf } from '../db/tasks.ts';
import { checkDuplicable, copyName, duplicateTask } from './tasks/duplicate.ts';
import { type StorageSettings, admitUpload } from './tasks/storage.ts';
import {
  deleteProjects,
  insertProject,
  ownerName,
  parseTaskIds,
  replaceSharing,
  revokeUser,
  sharingOf,
  taskIdsOf,
  updateProject,
  visibleProjectsWithTaskIds,
} from '../db/projects.ts';
import { type Database, PROJECT_PERMISSIONS, type Project, type ProjectPermission, flag } from '../db/schema.ts';
import { findUserByUsername } from '../db/users.ts';
import { projectFolder } from './layout.ts';
import { fieldError } from './errors.ts';
import { permissionsOn, requireProjectPermission } from './permissions.ts';
import { type Context, contextOf, loadVisible, registerResource, type ResourceDefinition } from './resource.ts';
import { Body, Id, IdParams, Success, Timestamp } from './schemas.ts';
import { TagsField, parseSearch, shownTags, storedTags } from './tags.ts';
import { projectSearch } from '../db/search.ts';
import type { App } from './typed-app.ts';

const Permission = Type.Union(PROJECT_PERMISSIONS.map((permission) => Type.Literal(permission)));

export const ProjectSchema = Type.Object(
  {
    id: Id,
    tasks: Type.Array(Type.Integer(), { description: 'Ids of the tasks of the project' }),
    created_at: Timestamp,
    name: Type.String(),
    description: Type.String(),
    permissions: Type.Array(Permission, { description: "The current user's permissions on the project" }),
    public: Type.Boolean({ description: 'Every task of the project is open to anyone with its link, as a public task is' }),
    public_edit: Type.Boolean({ description: "With public: anyone may also save the tasks' 3D scenes" }),
    tags: Type.Array(Type.String(), { description: 'Tags; one starting with "." is hidden in the web application' }),
  },
  { $id: 'Project' },
);
type ProjectItem = Static<typeof ProjectSchema>;
/** A project read with its tasks' ids, so that showing it takes no other query. */
type ProjectRow = Project & { task_ids: string | null };

const ProjectBody = Body({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.String({ default: '', maxLength: 65536 }),
  tags: Type.Optional(TagsField),
  public: Type.Optional(Type.Boolean()),
  public_edit: Type.Optional(Type.Boolean()),
});

/** The sharing flags a client gave (undefined: keep them). */
const sharing = (body: { public?: boolean; public_edit?: boolean }) => ({
  public: body.public === undefined ? undefined : flag(body.public),
  public_edit: body.public_edit === undefined ? undefined : flag(body.public_edit),
});

const UserGrant = Type.Object({
  username: Type.String(),
  owner: Type.Optional(Type.Boolean()),
  permissions: Type.Array(Permission),
});
const GroupGrant = Type.Object({ groupname: Type.String(), permissions: Type.Array(Permission) });
const Grant = Type.Union([UserGrant, GroupGrant]);

const EditBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  description: Type.Optional(Type.String({ maxLength: 65536 })),
  tags: Type.Optional(TagsField),
  permissions: Type.Optional(
    Type.Array(
      Type.Object({
        username: Type.Optional(Type.String()),
        groupname: Type.Optional(Type.String()),
        owner: Type.Optional(Type.Boolean()),
        permissions: Type.Array(Permission),
      }),
      {
        maxItems: 10000,
        description:
          'Replaces the sharing: each entry names a user (username) or a group (groupname); the owner is ignored, and users and groups left out lose their permissions',
      },
    ),
  ),
});

/**
 * Deletes projects. One without tasks goes at once with its folder; one with tasks is hidden at once and its
 * tasks are removed as any task is (the nodes' copies too), the project going with its last task. `now`
 * deletes every project at once (its owner is being deleted too), leaving the nodes' copies to their cleanup.
 */
export async function destroyProjects(db: Kysely<Database>, dataDir: string, ids: number[], now = false): Promise<void> {
  const tasks = await taskIdsOf(db, ids);
  const empty = now ? ids : ids.filter((id) => (tasks.get(id) ?? []).length === 0);
  await Promise.all(empty.map((id) => rm(projectFolder(dataDir, id), { recursive: true, force: true })));
  await deleteProjects(db, empty);
  await markProjectsDeleting(db, ids.filter((id) => !empty.includes(id)));
}

/**
 * A copy of a project owned by `ownerId`, named "Copy of ...", with copies of all its tasks (their names kept),
 * as WebODM's duplicate makes it; its sharing is not copied. Every task must be finished.
 */
async function duplicateProject(db: Kysely<Database>, storage: StorageSettings, project: Project, ownerId: number): Promise<number> {
  const { dataDir } = storage;
  const tasks = await tasksOf(db, project.id).orderBy('id').execute();
  tasks.forEach(checkDuplicable);
  const id = await insertProject(db, ownerId, { name: copyName(project.name), description: project.description, tags: project.tags });
  try {
    // The copies count against the quota of the copy's owner.
    await admitUpload(db, storage, id);
    for (const task of tasks) await duplicateTask(db, dataDir, task, { projectId: id, name: task.name });
  } catch (error) {
    await destroyProjects(db, dataDir, [id], true);
    throw error;
  }
  return id;
}

async function present(ctx: Context, rows: ProjectRow[]): Promise<ProjectItem[]> {
  const permissions = await permissionsOn(ctx.db, ctx.user, rows);
  return rows.map((row) => ({
    id: row.id,
    tasks: parseTaskIds(row.task_ids),
    created_at: row.created_at,
    name: row.name,
    description: row.description,
    permissions: permissions.get(row.id) ?? [],
    public: row.public === 1,
    public_edit: row.public_edit === 1,
    tags: shownTags(row.tags),
  }));
}

function definition(dataDir: string): ResourceDefinition<ProjectRow, ProjectItem, typeof ProjectBody, typeof ProjectBody> {
  return {
    path: '/api/projects',
    table: 'projects',
    noun: 'project',
    plural: 'projects',
    item: ProjectSchema,
    createBody: ProjectBody,
    updateBody: ProjectBody,
    list: {
      paged: true,
      filters: {
        id: { kind: 'integer', column: 'projects.id' },
        name: { kind: 'string', column: 'projects.name' },
        description: { kind: 'string', column: 'projects.description' },
        created_at: { kind: 'datetime', column: 'projects.created_at' },
        search: {
          kind: 'string',
          description:
            'Words in the name of the project or of one of its tasks; #tag (or :tag) a project tag, ##tag a task tag, @user the owner',
          where: (text: string) => projectSearch(parseSearch(text)),
        },
      },
      ordering: {
        id: 'projects.id',
        name: 'projects.name',
        description: 'projects.description',
        created_at: 'projects.created_at',
      },
      defaultOrdering: ['-created_at'],
    },
    scope: (ctx) => visibleProjectsWithTaskIds(ctx.db, { id: ctx.user.id, superuser: ctx.user.superuser }),
    present,
    create: (ctx, body) =>
      insertProject(ctx.db, ctx.user.id, { name: body.name, description: body.description, tags: storedTags(body.tags ?? []), ...sharing(body) }),
    async update(ctx, project, body) {
      await requireProjectPermission(ctx.db, ctx.user, project, 'change');
      const tags = body.tags === undefined ? undefined : storedTags(body.tags);
      await updateProject(ctx.db, project.id, { name: body.name, description: body.description, tags, ...sharing(body) });
    },
    async remove(ctx, project) {
      if (ctx.user.superuser || project.owner_id === ctx.user.id) {
        await destroyProjects(ctx.db, dataDir, [project.id]);
      } else {
        // As in WebODM: someone the project is shared with, holding "delete", removes it from their own list only,
        // so that a shared project cannot be destroyed by accident.
        await requireProjectPermission(ctx.db, ctx.user, project, 'delete');
        await revokeUser(ctx.db, project.id, ctx.user.id);
      }
    },
  };
}

type EditEntry = NonNullable<Static<typeof EditBody>['permissions']>[number];

/** Resolves the named users and groups of an edit to ids; the owner's entry is left out. */
async function resolveGrants(db: Kysely<Database>, owner: string, entries: EditEntry[]) {
  const users: { id: number; permissions: ProjectPermission[] }[] = [];
  const groups: { id: number; permissions: ProjectPermission[] }[] = [];
  for (const entry of entries) {
    if ((entry.username === undefined) === (entry.groupname === undefined)) {
      throw fieldError('permissions', 'Each entry needs either a username or a groupname.');
    }
    if (entry.username !== undefined) {
      if (entry.username === owner) continue;
      const user = await findUserByUsername(db, entry.username);
      if (!user) throw fieldError('permissions', 'Invalid user in permissions list');
      users.push({ id: user.id, permissions: entry.permissions });
    } else {
      const group = await findGroupByName(db, entry.groupname as string);
      if (!group) throw fieldError('permissions', 'Invalid group in permissions list');
      groups.push({ id: group.id, permissions: entry.permissions });
    }
  }
  return { users, groups };
}

export async function projectRoutes(app: App, { db, dataDir, minFreeBytes }: { db: Kysely<Database> } & StorageSettings) {
  const def = definition(dataDir);
  registerResource(app, db, def);

  app.get(
    '/api/projects/:id/permissions/',
    {
      schema: {
        tags: ['projects'],
        summary: "A project's sharing",
        description: 'The owner first, then the users and the groups the project is shared with. Needs "change".',
        params: IdParams,
        response: { 200: Type.Array(Grant), 403: Type.Ref('Error'), 404: Type.Ref('Error') },
      },
    },
    async (request) => {
      const ctx = contextOf(db, request);
      const project = await loadVisible(def, ctx, request.params.id);
      await requireProjectPermission(db, ctx.user, project, 'change');
      const [owner, sharing] = await Promise.all([ownerName(db, project), sharingOf(db, project.id)]);
      return [
        { username: owner, owner: true, permissions: [...PROJECT_PERMISSIONS] },
        ...sharing.users.filter((user) => user.username !== owner).map((user) => ({ ...user, owner: false })),
        ...sharing.groups,
      ];
    },
  );

  app.post(
    '/api/projects/:id/duplicate/',
    {
      schema: {
        tags: ['projects'],
        summary: 'Duplicate a project',
        description:
          'A new project of the caller\'s, named "Copy of ...", holding copies of all the project\'s tasks (each must be finished). Needs "change".',
        params: IdParams,
        response: {
          200: Type.Object({ success: Type.Boolean(), project: Type.Ref('Project') }),
          400: Type.Ref('Error'),
          403: Type.Ref('Error', { description: "Not allowed, or the copy's owner's storage quota is used up" }),
          404: Type.Ref('Error'),
          507: Type.Ref('Error', { description: "Insufficient Storage: the server's disk is within its reserve (MIN_FREE_DISK_GB)" }),
        },
      },
    },
    async (request) => {
      const ctx = contextOf(db, request);
      const project = await loadVisible(def, ctx, request.params.id);
      await requireProjectPermission(db, ctx.user, project, 'change');
      const id = await duplicateProject(db, { dataDir, minFreeBytes }, project, ctx.user.id);
      const [copy] = await present(ctx, [await loadVisible(def, ctx, id)]);
      return { success: true, project: copy };
    },
  );

  app.post(
    '/api/projects/:id/edit/',
    {
      schema: {
        tags: ['projects'],
        summary: "Change a project's name, description, tags and sharing",
        description: 'Needs "change". Fields left out keep their value.',
        params: IdParams,
        body: EditBody,
        response: { 200: Success, 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error') },
      },
    },
    async (request) => {
      const ctx = contextOf(db, request);
      const project = await loadVisible(def, ctx, request.params.id);
      await requireProjectPermission(db, ctx.user, project, 'change');
      const { name, description, permissions } = request.body;
      const tags = request.body.tags === undefined ? undefined : storedTags(request.body.tags);
      const grants = permissions && (await resolveGrants(db, await ownerName(db, project), permissions));
      await db.transaction().execute(async (trx) => {
        await updateProject(trx, project.id, { name, description, tags });
        if (grants) await replaceSharing(trx, project.id, grants.users, grants.groups);
      });
      return { success: true };
    },
  );
}
