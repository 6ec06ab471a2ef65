// The administration pages' logic that needs no browser: the project sharing levels and the users' groups,
// kept apart from the components so that it can be tested under Node.
import type { NodeOption, OptionValue } from '../options.ts';

/** The project permissions, as WebODM names them. */
export type Permission = 'view' | 'add' | 'change' | 'delete';

export type ShareLevel = 'view' | 'edit' | 'full';

export const SHARE_LEVELS: { level: ShareLevel; label: string; permissions: Permission[] }[] = [
  { level: 'view', label: 'View', permissions: ['view'] },
  { level: 'edit', label: 'Edit', permissions: ['view', 'add', 'change'] },
  { level: 'full', label: 'Full', permissions: ['view', 'add', 'change', 'delete'] },
];

/** The level a set of permissions is; null for a set granted otherwise (WebODM's API accepts any). */
export function levelOf(permissions: readonly string[]): ShareLevel | null {
  const held = [...new Set(permissions)].sort().join(',');
  return SHARE_LEVELS.find((entry) => [...entry.permissions].sort().join(',') === held)?.level ?? null;
}

export function permissionsOf(level: ShareLevel): Permission[] {
  return [...SHARE_LEVELS.find((entry) => entry.level === level)!.permissions];
}

/** The shapes of /api/admin/users/, /api/admin/groups/, /api/processingnodes/ and /api/presets/. */
export interface User {
  id: number;
  username: string;
  first_name: string;
  last_name: string;
  email: string;
  is_staff: boolean;
  is_superuser: boolean;
  is_active: boolean;
  last_login: string | null;
  date_joined: string;
  groups: number[];
}

export interface Group {
  id: number;
  name: string;
  permissions: number[];
}

export interface ProcessingNode {
  id: number;
  online: boolean;
  hostname: string;
  port: number;
  api_version: string;
  engine_version: string;
  engine: string;
  last_refreshed: string | null;
  queue_count: number;
  max_images: number | null;
  label: string;
  available_options: NodeOption[];
  token?: string;
}

export interface Preset {
  id: number;
  name: string;
  options: { name: string; value: OptionValue }[];
  created_at: string;
  system: boolean;
}

/** The users in a group: membership lives on the users (their `groups`), as in Django. */
export function membersOf(users: readonly User[], groupId: number): User[] {
  return users.filter((user) => user.groups.includes(groupId));
}

/** The users whose `groups` must change so that exactly `members` belong to the group. */
export function membershipChanges(users: readonly User[], groupId: number, members: ReadonlySet<number>): { id: number; groups: number[] }[] {
  return users.flatMap((user) => {
    const inGroup = user.groups.includes(groupId);
    if (inGroup === members.has(user.id)) return [];
    return [{ id: user.id, groups: inGroup ? user.groups.filter((id) => id !== groupId) : [...user.groups, groupId] }];
  });
}
