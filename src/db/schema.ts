// The tables as Kysely sees them. One schema serves SQLite and PostgreSQL, so it keeps to what both store
// alike: booleans are 0/1 integers (SQLite has no boolean and better-sqlite3 cannot bind one), timestamps are
// ISO 8601 UTC text with milliseconds (they sort as they read), JSON is text.
import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

export type Flag = 0 | 1;
/** "2024-05-01T12:00:00.000Z" */
export type Timestamp = string;

export interface UsersTable {
  id: Generated<number>;
  username: string;
  /** Django's pbkdf2_sha256$<iterations>$<salt>$<hash>, never the password itself. */
  password: string;
  email: Generated<string>;
  first_name: Generated<string>;
  last_name: Generated<string>;
  is_superuser: Generated<Flag>;
  is_staff: Generated<Flag>;
  is_active: Generated<Flag>;
  last_login: Timestamp | null;
  date_joined: Timestamp;
  /** Storage quota in MB; -1 or 0: none. */
  quota: Generated<number>;
}

export interface GroupsTable {
  id: Generated<number>;
  name: string;
}

export interface UserGroupsTable {
  user_id: number;
  group_id: number;
}

/** The catalogue that the admin API's user_permissions and group permissions ids point into. */
export interface PermissionsTable {
  id: Generated<number>;
  codename: string;
  name: string;
}

export interface UserPermissionsTable {
  user_id: number;
  permission_id: number;
}

export interface GroupPermissionsTable {
  group_id: number;
  permission_id: number;
}

export const PROJECT_PERMISSIONS = ['add', 'change', 'delete', 'view'] as const;
export type ProjectPermission = (typeof PROJECT_PERMISSIONS)[number];

export interface ProjectsTable {
  id: Generated<number>;
  owner_id: number;
  name: string;
  description: string;
  created_at: Timestamp;
  /** Hidden and on its way out: its tasks are being removed. */
  deleting: Generated<Flag>;
  /** Every task of the project is open to anyone, as a public task is. */
  public: Generated<Flag>;
  /** With public: anyone may also save the tasks' 3D scenes. */
  public_edit: Generated<Flag>;
  /** Space-separated tags, as WebODM stores them. */
  tags: Generated<string>;
}

export interface ProjectUserPermissionsTable {
  project_id: number;
  user_id: number;
  permission: ProjectPermission;
}

export interface ProjectGroupPermissionsTable {
  project_id: number;
  group_id: number;
  permission: ProjectPermission;
}

export interface TasksTable {
  id: Generated<number>;
  project_id: number;
  processing_node_id: number | null;
  /** The uuid a processing node gave the task; "" until it is uploaded. */
  uuid: Generated<string>;
  name: Generated<string>;
  images_count: Generated<number>;
  /** JSON array of asset names. */
  available_assets: Generated<string>;
  processing_time: Generated<number>;
  auto_processing_node: Generated<Flag>;
  status: number | null;
  last_error: string | null;
  /** JSON array of {name, value}. */
  options: Generated<string>;
  created_at: Timestamp;
  pending_action: number | null;
  upload_progress: Generated<number>;
  resize_progress: Generated<number>;
  running_progress: Generated<number>;
  /** Waiting for its files (chunked upload) before processing. */
  partial: Generated<Flag>;
  /** The service instance working on the task (null: none); see lease_until. */
  lease_owner: string | null;
  /** With an owner: the end of its lease. Without: when the task is next due (null: now). */
  lease_until: Timestamp | null;
  /** Lines of the node's console received so far. */
  console_lines: Generated<number>;
  /** Since when the assigned node has not answered; null while it does. */
  unreachable_since: Timestamp | null;
  /** Where an imported task's zip comes from: an http(s) URL, or "file://all.zip" for an uploaded one. */
  import_url: string | null;
  /** JSON [minx, miny, maxx, maxy] in WGS84 of the orthophoto (or the DSM, or the DTM); null without one. */
  extent: string | null;
  /** JSON object: the engine's quality figures (odm_report/stats.json). */
  statistics: Generated<string>;
  /** Bytes the task's files take on disk. */
  size: Generated<number>;
  /** Steps of the task that failed in a row; a step that succeeds sets it back to 0. */
  attempts: Generated<number>;
  /** The node has completed the task and its all.zip is still to be fetched. */
  download_pending: Generated<Flag>;
  /** Anyone may read the task and its results, signed in or not (WebODM's public link). */
  public: Generated<Flag>;
  /** With public: anyone may also save its 3D scene. */
  public_edit: Generated<Flag>;
  /** JSON object: the saved Potree scene (camera view, annotations...), WebODM's potree_scene. */
  potree_scene: Generated<string>;
  /** Space-separated tags, as WebODM stores them. */
  tags: Generated<string>;
  /** Longest side in pixels the photographs are reduced to before processing; -1: not resized. */
  resize_to: Generated<number>;
  /** The results' CRS: its EPSG code, or (without one) its WKT; both null before results. */
  epsg: number | null;
  wkt: string | null;
  /** JSON GeoJSON Polygon in WGS84 the results are cropped to; null: none. */
  crop: string | null;
  /** The photographs were removed (compact/); the results stay. */
  compacted: Generated<Flag>;
}

export interface ProcessingNodesTable {
  id: Generated<number>;
  hostname: string;
  port: number;
  /** Sent to the node as ?token=; "" when the node has none. */
  token: Generated<string>;
  api_version: Generated<string>;
  engine: Generated<string>;
  engine_version: Generated<string>;
  queue_count: Generated<number>;
  max_images: number | null;
  /** JSON array of the node's /options. */
  available_options: Generated<string>;
  last_refreshed: Timestamp | null;
  created_at: Timestamp;
}

export interface PresetsTable {
  id: Generated<number>;
  /** null for system presets, which belong to nobody. */
  owner_id: number | null;
  name: string;
  /** JSON array of {name, value}. */
  options: string;
  system: Flag;
  created_at: Timestamp;
}

/** Work that one service instance at a time does (e.g. refreshing the processing nodes), held until a time. */
export interface LeasesTable {
  name: string;
  owner: string | null;
  until: Timestamp | null;
}

export interface Database {
  users: UsersTable;
  groups: GroupsTable;
  user_groups: UserGroupsTable;
  permissions: PermissionsTable;
  user_permissions: UserPermissionsTable;
  group_permissions: GroupPermissionsTable;
  projects: ProjectsTable;
  project_user_permissions: ProjectUserPermissionsTable;
  project_group_permissions: ProjectGroupPermissionsTable;
  tasks: TasksTable;
  processing_nodes: ProcessingNodesTable;
  presets: PresetsTable;
  leases: LeasesTable;
}

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type Group = Selectable<GroupsTable>;
export type Project = Selectable<ProjectsTable>;
export type Task = Selectable<TasksTable>;
export type TaskUpdate = Updateable<TasksTable>;
export type ProcessingNode = Selectable<ProcessingNodesTable>;
export type ProcessingNodeUpdate = Updateable<ProcessingNodesTable>;
export type Preset = Selectable<PresetsTable>;

export function now(): Timestamp {
  return new Date().toISOString();
}

export const flag = (value: boolean): Flag => (value ? 1 : 0);

/** The object without its undefined fields: the changes an update really makes. */
export function defined<T extends object>(changes: T): Partial<T> {
  return Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)) as Partial<T>;
}
