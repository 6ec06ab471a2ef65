// WebODM's /api/admin/profiles/: each user's storage quota, looked up by user id. Staff read them; only
// superusers change them, since a quota decides how much of the disk a user may take.
import { Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import { findProfile, listProfiles, setQuota, usedBytes } from '../db/quotas.ts';
import type { Database } from '../db/schema.ts';
import { currentUser, requireAdmin } from './auth.ts';
import { notFound, permissionDenied } from './errors.ts';
import { Id } from './schemas.ts';
import { MB } from './tasks/storage.ts';
import type { App } from './typed-app.ts';

const Quota = Type.Integer({ minimum: -1, maximum: 2 ** 40, description: 'Storage quota in MB; -1 or 0: none' });
const ProfileSchema = Type.Object({ user: Id, quota: Quota });
const ProfileBody = Type.Object({ quota: Quota });
const UserParams = Type.Object({ user_id: Id });
const errors = { 403: Type.Ref('Error'), 404: Type.Ref('Error') };
const tags = ['admin'];

export async function profileRoutes(app: App, deps: { db: Kysely<Database> }): Promise<void> {
  const { db } = deps;
  const base = '/api/admin/profiles';
  const profileOf = async (userId: number) => {
    const profile = await findProfile(db, userId);
    if (!profile) throw notFound();
    return profile;
  };

  app.get(
    `${base}/`,
    { onRequest: requireAdmin, schema: { tags, summary: "Every user's quota (staff only)", response: { 200: Type.Array(ProfileSchema), ...errors } } },
    () => listProfiles(db),
  );

  app.get(
    `${base}/:user_id/`,
    { onRequest: requireAdmin, schema: { tags, summary: "A user's quota (staff only)", params: UserParams, response: { 200: ProfileSchema, ...errors } } },
    (request) => profileOf(request.params.user_id),
  );

  const change = {
    onRequest: requireAdmin,
    schema: {
      tags,
      summary: "Sets a user's quota (superusers only)",
      params: UserParams,
      body: ProfileBody,
      response: { 200: ProfileSchema, 400: Type.Ref('Error'), ...errors },
    },
  };
  for (const method of ['put', 'patch'] as const) {
    app[method](`${base}/:user_id/`, change, async (request) => {
      if (!currentUser(request).superuser) throw permissionDenied('Only a superuser can change a quota.');
      await profileOf(request.params.user_id);
      await setQuota(db, request.params.user_id, request.body.quota);
      return profileOf(request.params.user_id);
    });
  }

  app.get(
    `${base}/:user_id/used_quota/`,
    {
      onRequest: requireAdmin,
      schema: {
        tags,
        summary: "The space a user's projects take, and their quota, in MB",
        params: UserParams,
        response: { 200: Type.Object({ used: Type.Number(), total: Quota }), ...errors },
      },
    },
    async (request) => {
      const { user, quota } = await profileOf(request.params.user_id);
      return { used: (await usedBytes(db, user)) / MB, total: quota };
    },
  );
}
